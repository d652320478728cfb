/* hostdev_module.c: the CPython module slimtensor_hostdev._hostdev: plugin capsules and the plugin's counters. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "hostdev.h"

/* Note [hostdev capsule]
 * The only thing that crosses into slimtensor is a PyCapsule named "slimtensor.device_plugin" whose
 * pointer is an st_plugin_init_fn. slimtensor._C unpacks it by name, calls it, checks the table it gets
 * back (Note [Plugin ABI]) and keeps it. No Python or C++ object of slimtensor is ever seen here. */
static PyObject* plugin_capsule(PyObject* self, PyObject* args) {
  (void)self;
  const char* name = "ok";
  if (!PyArg_ParseTuple(args, "|s:plugin_capsule", &name)) return NULL;
  for (int v = 0; v < HOSTDEV_VARIANT_COUNT; ++v) {
    if (strcmp(name, hostdev_variant_name((hostdev_variant)v)) == 0) {
      st_plugin_init_fn init = hostdev_init_function((hostdev_variant)v);
      /* POSIX guarantees that function pointers round-trip through void*. */
      void* pointer;
      memcpy(&pointer, &init, sizeof pointer);
      return PyCapsule_New(pointer, ST_PLUGIN_CAPSULE_NAME, NULL);
    }
  }
  PyErr_Format(PyExc_ValueError,
               "plugin_capsule(): unknown variant %R; expected one of 'ok', 'bad_major', 'bad_minor', "
               "'small_struct', 'init_fails'",
               PyTuple_GET_ITEM(args, 0));
  return NULL;
}

static int set_int(PyObject* dict, const char* key, long long value) {
  PyObject* v = PyLong_FromLongLong(value);
  if (!v) return -1;
  int rc = PyDict_SetItemString(dict, key, v);
  Py_DECREF(v);
  return rc;
}

static PyObject* counters(PyObject* self, PyObject* args) {
  (void)self;
  int index = 0;
  if (!PyArg_ParseTuple(args, "i:counters", &index)) return NULL;
  hostdev_counters c;
  if (hostdev_read_counters(index, &c) != 0) {
    PyErr_Format(PyExc_IndexError, "counters(): hostdev has devices 0..%d, got index %d",
                 HOSTDEV_DEVICE_COUNT - 1, index);
    return NULL;
  }
  PyObject* d = PyDict_New();
  if (!d) return NULL;
  if (set_int(d, "allocations", c.allocations) || set_int(d, "frees", c.frees) ||
      set_int(d, "live_allocations", c.allocations - c.frees) || set_int(d, "live_bytes", c.live_bytes) ||
      set_int(d, "peak_bytes", c.peak_bytes) || set_int(d, "failed_allocations", c.failed_allocations) ||
      set_int(d, "copies_host_to_device", c.copies_host_to_device) ||
      set_int(d, "copies_device_to_host", c.copies_device_to_host) ||
      set_int(d, "copies_device_to_device", c.copies_device_to_device) ||
      set_int(d, "strided_copies", c.strided_copies) || set_int(d, "fills", c.fills) ||
      set_int(d, "synchronizes", c.synchronizes) || set_int(d, "errors", c.errors)) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

static PyObject* last_error(PyObject* self, PyObject* args) {
  (void)self;
  (void)args;
  return PyUnicode_FromString(hostdev_last_error());
}

static PyMethodDef methods[] = {
    {"plugin_capsule", plugin_capsule, METH_VARARGS,
     "plugin_capsule(variant='ok') -> capsule 'slimtensor.device_plugin' holding that variant's st_plugin_init"},
    {"counters", counters, METH_VARARGS, "counters(index) -> dict of the plugin's own counters for hostdev:index"},
    {"last_error", last_error, METH_NOARGS, "last_error() -> the calling thread's last plugin error message"},
    {NULL, NULL, 0, NULL},
};

static int exec_module(PyObject* m) {
  if (PyModule_AddStringConstant(m, "DEVICE_NAME", HOSTDEV_NAME) < 0) return -1;
  if (PyModule_AddIntConstant(m, "DEVICE_TYPE", HOSTDEV_DEVICE_TYPE) < 0) return -1;
  if (PyModule_AddIntConstant(m, "DEVICE_COUNT", HOSTDEV_DEVICE_COUNT) < 0) return -1;
  if (PyModule_AddIntConstant(m, "ABI_MAJOR", ST_PLUGIN_ABI_MAJOR) < 0) return -1;
  if (PyModule_AddIntConstant(m, "ABI_MINOR", ST_PLUGIN_ABI_MINOR) < 0) return -1;
  if (PyModule_AddStringConstant(m, "ABSENT_ENV", HOSTDEV_ABSENT_ENV) < 0) return -1;
  if (PyModule_AddStringConstant(m, "CAPACITY_ENV", HOSTDEV_CAPACITY_ENV) < 0) return -1;
  return 0;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, (void*)exec_module},
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_hostdev", "The hostdev test device plugin (C, plugin ABI only).", 0, methods,
    slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__hostdev(void) { return PyModuleDef_Init(&module); }
