/* fallback.c: slimtensor_cuda._fallback, a device table that only says why CUDA cannot be used.
 *
 * Used when slimtensor_cuda._C cannot load (its libcudart.so.13 is missing): the device still registers,
 * as unavailable with the reason (Note [Lazy CUDA]), so st.devices() explains and every device="cuda"
 * call raises that reason. Every memory function fails with the same message; nothing is faked. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>
#include <string.h>

#include "slimtensor/c/device_plugin.h"

static char g_reason[1024] = "the CUDA plugin could not load";
static char g_error[1200];

static int fail_here(const char* fn) {
  snprintf(g_error, sizeof g_error, "slimtensor_cuda %s(): the CUDA device is unavailable: %s", fn, g_reason);
  return 1;
}
static const char* f_reason(void* ctx) {
  (void)ctx;
  return g_reason;
}
static int f_count(void* ctx, int32_t* n) {
  (void)ctx;
  if (n) *n = 0;
  return 0;
}
static const char* f_last_error(void* ctx) {
  (void)ctx;
  return g_error;
}
static int f_sync(void* ctx, int32_t i) {
  (void)ctx;
  (void)i;
  return fail_here("synchronize");
}
static int f_cur_stream(void* ctx, int32_t i, void** s) {
  (void)ctx;
  (void)i;
  (void)s;
  return fail_here("current_stream");
}
static int f_alloc(void* ctx, int32_t i, uint64_t n, void* s, void** h) {
  (void)ctx;
  (void)i;
  (void)n;
  (void)s;
  if (h) *h = NULL;
  return fail_here("allocate_v2");
}
static void f_free(void* ctx, int32_t i, void* h, uint64_t n, void* s) {
  (void)ctx;
  (void)i;
  (void)h;
  (void)n;
  (void)s;
}
static int f_from_host(void* ctx, st_memory_ref d, const void* h, uint64_t n, void* s, uint32_t f) {
  (void)ctx;
  (void)d;
  (void)h;
  (void)n;
  (void)s;
  (void)f;
  return fail_here("copy_from_host");
}
static int f_to_host(void* ctx, void* h, st_memory_ref src, uint64_t n, void* s, uint32_t f) {
  (void)ctx;
  (void)h;
  (void)src;
  (void)n;
  (void)s;
  (void)f;
  return fail_here("copy_to_host");
}
static int f_on_dev(void* ctx, st_memory_ref d, st_memory_ref src, uint64_t n, void* s) {
  (void)ctx;
  (void)d;
  (void)src;
  (void)n;
  (void)s;
  return fail_here("copy_on_device");
}
static int f_sync_stream(void* ctx, int32_t i, void* s) {
  (void)ctx;
  (void)i;
  (void)s;
  return fail_here("synchronize_stream");
}
static int f_get_dev(void* ctx, int32_t* i) {
  (void)ctx;
  (void)i;
  return fail_here("get_current_device");
}
static int f_set_dev(void* ctx, int32_t i) {
  (void)ctx;
  (void)i;
  return fail_here("set_current_device");
}

static st_device_table g_table;

static int fallback_init(const st_core_table* core, const st_device_table** out) {
  (void)core;
  memset(&g_table, 0, sizeof g_table);
  g_table.struct_size = sizeof(st_device_table);
  g_table.abi_major = ST_PLUGIN_ABI_MAJOR;
  g_table.abi_minor = 1; /* the minor this table implements */
  g_table.name = "cuda";
  g_table.device_type = 1;
  g_table.dlpack_device_type = 2;
  g_table.plugin_version = SLIMTENSOR_CUDA_VERSION;
  g_table.unavailable_reason = f_reason;
  g_table.device_count = f_count;
  g_table.synchronize = f_sync;
  g_table.current_stream = f_cur_stream;
  g_table.last_error = f_last_error;
  g_table.memory_flags = ST_DEVICE_MEMORY_ADDRESSABLE;
  g_table.allocate_v2 = f_alloc;
  g_table.free_v2 = f_free;
  g_table.copy_from_host = f_from_host;
  g_table.copy_to_host = f_to_host;
  g_table.copy_on_device = f_on_dev;
  g_table.synchronize_stream = f_sync_stream;
  g_table.get_current_device = f_get_dev;
  g_table.set_current_device = f_set_dev;
  *out = &g_table;
  return 0;
}

static PyObject* capsule(PyObject* self, PyObject* args) {
  (void)self;
  const char* reason = NULL;
  if (!PyArg_ParseTuple(args, "s", &reason)) return NULL;
  snprintf(g_reason, sizeof g_reason, "%s", reason);
  st_plugin_init_fn init = fallback_init;
  void* p;
  memcpy(&p, &init, sizeof p);
  return PyCapsule_New(p, ST_PLUGIN_CAPSULE_NAME, NULL);
}

static PyMethodDef methods[] = {
    {"capsule", capsule, METH_VARARGS, "capsule(reason): a plugin capsule whose device is unavailable for `reason`."},
    {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fallback", "An unavailable CUDA device table.", -1,
                                    methods};
PyMODINIT_FUNC PyInit__fallback(void) { return PyModule_Create(&module); }
