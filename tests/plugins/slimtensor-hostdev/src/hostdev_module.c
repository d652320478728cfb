/* hostdev_module.c: the CPython module slimtensor_hostdev._hostdev: plugin capsules, the plugin's counters, and
 * raw calls into its device table for the tests (streams, events, memory by token). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "abi10/hostdev_abi10.h"
#include "hostdev.h"

/* Note [hostdev capsule]
 * The only thing that crosses into slimtensor is a PyCapsule named "slimtensor.device_plugin" whose
 * pointer is an st_plugin_init_fn. slimtensor._C unpacks it by name, calls it, checks the table it gets
 * back (Note [Plugin ABI]) and keeps it. No Python or C++ object of slimtensor is ever seen here.
 *
 * Note [hostdev raw calls]
 * The raw_* and stream/event functions call the registered device table exactly as the core would, with
 * tokens and streams as Python ints (a stream is its id; None is ST_STREAM_CURRENT). They let the tests
 * drive sequences the core never produces (a missing event wait, a token plus an offset) and see what the
 * plugin does. Bad handles they pass are counted as bad_handles_raw, not as the core's bad_handles. */

static PyObject* plugin_capsule(PyObject* self, PyObject* args) {
  (void)self;
  const char* name = "ok";
  if (!PyArg_ParseTuple(args, "|s:plugin_capsule", &name)) return NULL;
  for (int v = 0; v < HOSTDEV_VARIANT_COUNT; ++v) {
    if (strcmp(name, hostdev_variant_name((hostdev_variant)v)) == 0) {
      st_plugin_init_fn init = hostdev_init_function((hostdev_variant)v);
      void* pointer; /* POSIX guarantees that function pointers round-trip through void* */
      memcpy(&pointer, &init, sizeof pointer);
      return PyCapsule_New(pointer, ST_PLUGIN_CAPSULE_NAME, NULL);
    }
  }
  PyObject* names = PyList_New(0);
  for (int v = 0; names && v < HOSTDEV_VARIANT_COUNT; ++v) {
    PyObject* n = PyUnicode_FromString(hostdev_variant_name((hostdev_variant)v));
    if (!n || PyList_Append(names, n) < 0) Py_CLEAR(names);
    Py_XDECREF(n);
  }
  if (names) {
    PyErr_Format(PyExc_ValueError, "plugin_capsule(): unknown variant '%s'; expected one of %R", name, names);
    Py_DECREF(names);
  }
  return NULL;
}

static int set_int(PyObject* dict, const char* key, long long value) {
  PyObject* v = PyLong_FromLongLong(value);
  if (!v) return -1;
  int rc = PyDict_SetItemString(dict, key, v);
  Py_DECREF(v);
  return rc;
}

static int check_device(int index) {
  if (index < 0 || index >= HOSTDEV_DEVICE_COUNT) {
    PyErr_Format(PyExc_IndexError, "hostdev has devices 0..%d, got index %d", HOSTDEV_DEVICE_COUNT - 1, index);
    return -1;
  }
  return 0;
}

static PyObject* counters(PyObject* self, PyObject* args) {
  (void)self;
  int index = 0;
  if (!PyArg_ParseTuple(args, "i:counters", &index)) return NULL;
  hostdev_counters c;
  if (check_device(index) < 0 || hostdev_read_counters(index, &c) != 0) return NULL;
  PyObject* d = PyDict_New();
  if (!d) return NULL;
  const struct {
    const char* key;
    long long value;
  } items[] = {
      {"allocations", c.allocations},
      {"frees", c.frees},
      {"live_allocations", c.allocations - c.frees},
      {"live_bytes", c.live_bytes},
      {"peak_bytes", c.peak_bytes},
      {"failed_allocations", c.failed_allocations},
      {"live_tokens", c.live_tokens},
      {"pending_frees", c.pending_frees},
      {"bad_handles", c.bad_handles},
      {"bad_handles_raw", c.bad_handles_raw},
      {"unordered_frees", c.unordered_frees},
      {"copies_host_to_device", c.copies_host_to_device},
      {"copies_device_to_host", c.copies_device_to_host},
      {"copies_device_to_device", c.copies_device_to_device},
      {"non_blocking_copies", c.non_blocking_copies},
      {"strided_copies", c.strided_copies},
      {"fills", c.fills},
      {"synchronizes", c.synchronizes},
      {"stream_synchronizes", c.stream_synchronizes},
      {"events_created", c.events_created},
      {"events_destroyed", c.events_destroyed},
      {"events_recorded", c.events_recorded},
      {"events_waited", c.events_waited},
      {"event_synchronizes", c.event_synchronizes},
      {"record_streams", c.record_streams},
      {"stream_errors", c.stream_errors},
      {"errors", c.errors},
  };
  for (size_t i = 0; i < sizeof items / sizeof items[0]; ++i) {
    if (set_int(d, items[i].key, items[i].value) < 0) {
      Py_DECREF(d);
      return NULL;
    }
  }
  return d;
}

static PyObject* abi10_counters(PyObject* self, PyObject* args) {
  (void)self;
  int index = 0;
  if (!PyArg_ParseTuple(args, "i:abi10_counters", &index)) return NULL;
  int64_t values[HOSTDEV_ABI10_COUNTER_COUNT];
  if (hostdev_abi10_counters(index, values) != 0) {
    PyErr_Format(PyExc_IndexError, HOSTDEV_ABI10_NAME " has devices 0..%d, got index %d",
                 HOSTDEV_ABI10_DEVICE_COUNT - 1, index);
    return NULL;
  }
  PyObject* d = PyDict_New();
  for (int i = 0; d && i < HOSTDEV_ABI10_COUNTER_COUNT; ++i) {
    if (set_int(d, hostdev_abi10_counter_name(i), values[i]) < 0) Py_CLEAR(d);
  }
  return d;
}

static PyObject* stream_counters(PyObject* self, PyObject* args) {
  (void)self;
  long long id = 0;
  if (!PyArg_ParseTuple(args, "L:stream_counters", &id)) return NULL;
  hostdev_stream_counters c;
  if (hostdev_read_stream_counters(id, &c) != 0) {
    PyErr_Format(PyExc_ValueError, "stream_counters(): hostdev has no stream %lld", id);
    return NULL;
  }
  PyObject* d = PyDict_New();
  if (d &&
      (set_int(d, "device", c.device) || set_int(d, "ops_queued", c.ops_queued) || set_int(d, "ops_run", c.ops_run) ||
       set_int(d, "ops_delayed", c.ops_delayed) || set_int(d, "waits", c.waits)))
    Py_CLEAR(d);
  return d;
}

static PyObject* last_error(PyObject* self, PyObject* args) {
  (void)self;
  (void)args;
  return PyUnicode_FromString(hostdev_last_error());
}

/* ---- raw calls (Note [hostdev raw calls]) ---- */

static const st_device_table* table_or_raise(void) {
  const st_device_table* t = hostdev_table();
  if (!t) PyErr_SetString(PyExc_RuntimeError, "hostdev is not registered with slimtensor yet (call register())");
  return t;
}

static PyObject* raise_plugin_error(void) {
  PyErr_SetString(PyExc_RuntimeError, hostdev_last_error());
  return NULL;
}

/* None -> ST_STREAM_CURRENT; an int -> the handle of that stream id (which may name no stream). */
static int to_stream(PyObject* obj, void* out) {
  if (obj == Py_None) {
    *(void**)out = ST_STREAM_CURRENT;
    return 1;
  }
  long long id = PyLong_AsLongLong(obj);
  if (id == -1 && PyErr_Occurred()) return 0;
  *(void**)out = hostdev_stream_handle_for_id(id);
  return 1;
}

static int to_handle(PyObject* obj, void* out) {
  unsigned long long v = PyLong_AsUnsignedLongLongMask(obj);
  if (PyErr_Occurred()) return 0;
  *(void**)out = (void*)(uintptr_t)v;
  return 1;
}

#define RAW_BEGIN Py_BEGIN_ALLOW_THREADS hostdev_set_raw_call(1);
#define RAW_END            \
  hostdev_set_raw_call(0); \
  Py_END_ALLOW_THREADS

static PyObject* stream_id_or_raise(hd_stream* s) {
  if (!s) return raise_plugin_error();
  return PyLong_FromLongLong(hostdev_stream_id(s));
}

static PyObject* default_stream(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  if (!PyArg_ParseTuple(args, "i:default_stream", &index) || check_device(index) < 0) return NULL;
  return stream_id_or_raise(hostdev_default_stream(index));
}

static PyObject* stream_create(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  if (!PyArg_ParseTuple(args, "i:stream_create", &index) || check_device(index) < 0) return NULL;
  return stream_id_or_raise(hostdev_stream_create(index));
}

static PyObject* current_stream(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  if (!PyArg_ParseTuple(args, "i:current_stream", &index) || check_device(index) < 0) return NULL;
  return stream_id_or_raise(hostdev_current_stream(index));
}

static PyObject* set_current_stream(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  long long id;
  if (!PyArg_ParseTuple(args, "iL:set_current_stream", &index, &id) || check_device(index) < 0) return NULL;
  hd_stream* s = hostdev_stream_by_id(id);
  if (!s) return PyErr_Format(PyExc_ValueError, "set_current_stream(): hostdev has no stream %lld", id);
  if (hostdev_set_current_stream(index, s) != 0) return PyErr_Format(PyExc_ValueError, "%s", hostdev_last_error());
  Py_RETURN_NONE;
}

static PyObject* stream_stall(PyObject* self, PyObject* args) {
  (void)self;
  long long id, us;
  if (!PyArg_ParseTuple(args, "LL:stream_stall", &id, &us)) return NULL;
  hd_stream* s = hostdev_stream_by_id(id);
  if (!s) return PyErr_Format(PyExc_ValueError, "stream_stall(): hostdev has no stream %lld", id);
  if (us < 0 || us > 10000000) return PyErr_Format(PyExc_ValueError, "stream_stall(): 0 <= us <= 1e7, got %lld", us);
  hd_op_args op;
  memset(&op, 0, sizeof op);
  op.kind = HD_OP_STALL;
  op.counter_device = hostdev_stream_device(s);
  op.stall_us = us;
  if (hostdev_enqueue(s, &op, NULL) != 0) return raise_plugin_error();
  Py_RETURN_NONE;
}

static PyObject* set_delay(PyObject* self, PyObject* args) {
  (void)self;
  long long delay, jitter;
  if (!PyArg_ParseTuple(args, "LL:set_delay", &delay, &jitter)) return NULL;
  if (delay < 0 || jitter < 0 || delay > 10000000 || jitter > 10000000) {
    return PyErr_Format(PyExc_ValueError, "set_delay(): delays are in [0, 1e7] microseconds");
  }
  int64_t old_delay, old_jitter;
  hostdev_get_delay(&old_delay, &old_jitter);
  hostdev_set_delay(delay, jitter);
  return Py_BuildValue("(LL)", (long long)old_delay, (long long)old_jitter);
}

static PyObject* get_delay(PyObject* self, PyObject* args) {
  (void)self;
  (void)args;
  int64_t delay, jitter;
  hostdev_get_delay(&delay, &jitter);
  return Py_BuildValue("(LL)", (long long)delay, (long long)jitter);
}

static PyObject* synchronize(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  if (!PyArg_ParseTuple(args, "i:synchronize", &index)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  int rc;
  RAW_BEGIN rc = t->synchronize(t->ctx, index);
  RAW_END if (rc) return raise_plugin_error();
  Py_RETURN_NONE;
}

static PyObject* synchronize_stream(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  void* stream;
  if (!PyArg_ParseTuple(args, "iO&:synchronize_stream", &index, to_stream, &stream)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  int rc;
  RAW_BEGIN rc = t->synchronize_stream(t->ctx, index, stream);
  RAW_END if (rc) return raise_plugin_error();
  Py_RETURN_NONE;
}

static PyObject* get_current_device(PyObject* self, PyObject* args) {
  (void)self;
  (void)args;
  const st_device_table* t = table_or_raise();
  int32_t index = -1;
  if (!t) return NULL;
  if (t->get_current_device(t->ctx, &index)) return raise_plugin_error();
  return PyLong_FromLong(index);
}

static PyObject* set_current_device(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  if (!PyArg_ParseTuple(args, "i:set_current_device", &index)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  if (t->set_current_device(t->ctx, index)) return PyErr_Format(PyExc_ValueError, "%s", hostdev_last_error());
  Py_RETURN_NONE;
}

static PyObject* stream_to_dlpack(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  void* stream;
  if (!PyArg_ParseTuple(args, "iO&:stream_to_dlpack", &index, to_stream, &stream)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  int64_t value = 0;
  int rc;
  RAW_BEGIN rc = t->stream_to_dlpack(t->ctx, index, stream, &value);
  RAW_END if (rc) return raise_plugin_error();
  return PyLong_FromLongLong(value);
}

static PyObject* stream_from_dlpack(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  long long value;
  if (!PyArg_ParseTuple(args, "iL:stream_from_dlpack", &index, &value)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  void* stream = NULL;
  int rc;
  RAW_BEGIN rc = t->stream_from_dlpack(t->ctx, index, value, &stream);
  RAW_END if (rc) return PyErr_Format(PyExc_ValueError, "%s", hostdev_last_error());
  return PyLong_FromUnsignedLongLong((uintptr_t)stream & 0x00ffffffffffffffull); /* the id */
}

static PyObject* raw_allocate(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  unsigned long long nbytes;
  void* stream = ST_STREAM_CURRENT;
  if (!PyArg_ParseTuple(args, "iK|O&:raw_allocate", &index, &nbytes, to_stream, &stream)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  void* handle = NULL;
  int rc;
  RAW_BEGIN rc = t->allocate_v2(t->ctx, index, nbytes, stream, &handle);
  RAW_END if (rc) return raise_plugin_error();
  return PyLong_FromUnsignedLongLong((uintptr_t)handle);
}

static PyObject* raw_free(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  void* handle;
  unsigned long long nbytes;
  void* stream = ST_STREAM_CURRENT;
  if (!PyArg_ParseTuple(args, "iO&K|O&:raw_free", &index, to_handle, &handle, &nbytes, to_stream, &stream)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  RAW_BEGIN t->free_v2(t->ctx, index, handle, nbytes, stream);
  RAW_END Py_RETURN_NONE;
}

static PyObject* raw_write(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  void* handle;
  unsigned long long offset;
  Py_buffer data;
  void* stream = ST_STREAM_CURRENT;
  if (!PyArg_ParseTuple(args, "iO&Ky*|O&:raw_write", &index, to_handle, &handle, &offset, &data, to_stream, &stream))
    return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) {
    PyBuffer_Release(&data);
    return NULL;
  }
  st_memory_ref ref = {handle, offset, index, 0};
  int rc;
  RAW_BEGIN rc = t->copy_from_host(t->ctx, ref, data.buf, (uint64_t)data.len, stream, 0); /* blocking */
  RAW_END PyBuffer_Release(&data);
  if (rc) return raise_plugin_error();
  Py_RETURN_NONE;
}

static PyObject* raw_read(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  void* handle;
  unsigned long long offset, nbytes;
  void* stream = ST_STREAM_CURRENT;
  if (!PyArg_ParseTuple(args, "iO&KK|O&:raw_read", &index, to_handle, &handle, &offset, &nbytes, to_stream, &stream))
    return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  if (nbytes > (1ull << 30)) return PyErr_Format(PyExc_ValueError, "raw_read(): at most 1 GiB at a time");
  PyObject* out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)nbytes);
  if (!out) return NULL;
  st_memory_ref ref = {handle, offset, index, 0};
  char* host = PyBytes_AS_STRING(out);
  int rc;
  RAW_BEGIN rc = t->copy_to_host(t->ctx, host, ref, nbytes, stream, 0); /* blocking */
  RAW_END if (rc) {
    Py_DECREF(out);
    return raise_plugin_error();
  }
  return out;
}

static PyObject* raw_copy(PyObject* self, PyObject* args) {
  (void)self;
  int dst_index, src_index;
  void *dst, *src;
  unsigned long long dst_offset, src_offset, nbytes;
  void* stream = ST_STREAM_CURRENT;
  if (!PyArg_ParseTuple(args, "iO&KiO&KK|O&:raw_copy", &dst_index, to_handle, &dst, &dst_offset, &src_index, to_handle,
                        &src, &src_offset, &nbytes, to_stream, &stream))
    return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  st_memory_ref d = {dst, dst_offset, dst_index, 0}, s = {src, src_offset, src_index, 0};
  int rc;
  RAW_BEGIN rc = t->copy_on_device(t->ctx, d, s, nbytes, stream);
  RAW_END if (rc) return raise_plugin_error();
  Py_RETURN_NONE;
}

static PyObject* raw_fill(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  void* handle;
  unsigned long long offset, nbytes;
  Py_buffer pattern;
  void* stream = ST_STREAM_CURRENT;
  if (!PyArg_ParseTuple(args, "iO&KKy*|O&:raw_fill", &index, to_handle, &handle, &offset, &nbytes, &pattern, to_stream,
                        &stream))
    return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) {
    PyBuffer_Release(&pattern);
    return NULL;
  }
  st_memory_ref ref = {handle, offset, index, 0};
  int rc;
  RAW_BEGIN rc = t->fill_v2(t->ctx, ref, nbytes, pattern.buf, (uint32_t)pattern.len, stream);
  RAW_END PyBuffer_Release(&pattern);
  if (rc) return raise_plugin_error();
  Py_RETURN_NONE;
}

static PyObject* raw_record_stream(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  void *handle, *stream;
  if (!PyArg_ParseTuple(args, "iO&O&:raw_record_stream", &index, to_handle, &handle, to_stream, &stream)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  int rc;
  RAW_BEGIN rc = t->record_stream(t->ctx, index, handle, stream);
  RAW_END if (rc) return raise_plugin_error();
  Py_RETURN_NONE;
}

static PyObject* event_create(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  if (!PyArg_ParseTuple(args, "i:event_create", &index)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  void* event = NULL;
  if (t->event_create(t->ctx, index, &event)) return raise_plugin_error();
  return PyLong_FromUnsignedLongLong((uintptr_t)event);
}

static PyObject* event_destroy(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  void* event;
  if (!PyArg_ParseTuple(args, "iO&:event_destroy", &index, to_handle, &event)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  hostdev_set_raw_call(1);
  t->event_destroy(t->ctx, index, event);
  hostdev_set_raw_call(0);
  Py_RETURN_NONE;
}

static PyObject* event_record(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  void *event, *stream = ST_STREAM_CURRENT;
  if (!PyArg_ParseTuple(args, "iO&|O&:event_record", &index, to_handle, &event, to_stream, &stream)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  int rc;
  RAW_BEGIN rc = t->event_record(t->ctx, index, event, stream);
  RAW_END if (rc) return raise_plugin_error();
  Py_RETURN_NONE;
}

static PyObject* stream_wait_event(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  void *stream, *event;
  if (!PyArg_ParseTuple(args, "iO&O&:stream_wait_event", &index, to_stream, &stream, to_handle, &event)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  int rc;
  RAW_BEGIN rc = t->stream_wait_event(t->ctx, index, stream, event);
  RAW_END if (rc) return raise_plugin_error();
  Py_RETURN_NONE;
}

static PyObject* event_synchronize(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  void* event;
  if (!PyArg_ParseTuple(args, "iO&:event_synchronize", &index, to_handle, &event)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  int rc;
  RAW_BEGIN rc = t->event_synchronize(t->ctx, index, event);
  RAW_END if (rc) return raise_plugin_error();
  Py_RETURN_NONE;
}

static PyObject* locate_pointer(PyObject* self, PyObject* args) {
  (void)self;
  void* ptr;
  if (!PyArg_ParseTuple(args, "O&:locate_pointer", to_handle, &ptr)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  int32_t index = -1;
  if (t->locate_pointer(t->ctx, ptr, &index)) return PyErr_Format(PyExc_ValueError, "%s", hostdev_last_error());
  return PyLong_FromLong(index);
}

static PyObject* host_allocate(PyObject* self, PyObject* args) {
  (void)self;
  unsigned long long nbytes;
  if (!PyArg_ParseTuple(args, "K:host_allocate", &nbytes)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  void* p = NULL;
  if (t->host_allocate(t->ctx, nbytes, &p)) return raise_plugin_error();
  return PyLong_FromUnsignedLongLong((uintptr_t)p);
}

static PyObject* host_free(PyObject* self, PyObject* args) {
  (void)self;
  void* p;
  unsigned long long nbytes;
  if (!PyArg_ParseTuple(args, "O&K:host_free", to_handle, &p, &nbytes)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  hostdev_set_raw_call(1);
  t->host_free(t->ctx, p, nbytes);
  hostdev_set_raw_call(0);
  Py_RETURN_NONE;
}

static PyObject* host_is_pinned(PyObject* self, PyObject* args) {
  (void)self;
  void* p;
  if (!PyArg_ParseTuple(args, "O&:host_is_pinned", to_handle, &p)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  int32_t pinned = 0;
  if (t->host_is_pinned(t->ctx, p, &pinned)) return raise_plugin_error();
  return PyBool_FromLong(pinned);
}

static PyObject* pinned_stats(PyObject* self, PyObject* args) {
  (void)self;
  (void)args;
  int64_t bytes, blocks;
  hostdev_pinned_stats(&bytes, &blocks);
  return Py_BuildValue("{s:L,s:L}", "bytes", (long long)bytes, "blocks", (long long)blocks);
}

static void emit_into(void* user, const char* key, int64_t value) {
  PyObject* d = (PyObject*)user;
  if (d && !PyErr_Occurred()) set_int(d, key, value);
}

static PyObject* allocator_stats(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  if (!PyArg_ParseTuple(args, "i:allocator_stats", &index)) return NULL;
  const st_device_table* t = table_or_raise();
  if (!t) return NULL;
  PyObject* d = PyDict_New();
  if (!d) return NULL;
  if (t->allocator_stats(t->ctx, index, emit_into, d)) {
    Py_DECREF(d);
    return raise_plugin_error();
  }
  if (PyErr_Occurred()) Py_CLEAR(d);
  return d;
}

#define M(name, flags, doc) {#name, (PyCFunction)name, flags, doc}
static PyMethodDef methods[] = {
    M(plugin_capsule, METH_VARARGS, "plugin_capsule(variant='ok') -> capsule 'slimtensor.device_plugin'"),
    M(counters, METH_VARARGS, "counters(index) -> dict of the plugin's own counters for hostdev:index"),
    M(abi10_counters, METH_VARARGS, "abi10_counters(index) -> dict of hostdev_abi10's counters"),
    M(stream_counters, METH_VARARGS, "stream_counters(id) -> {device, ops_queued, ops_run, ops_delayed, waits}"),
    M(last_error, METH_NOARGS, "last_error() -> the calling thread's last plugin error message"),
    M(default_stream, METH_VARARGS, "default_stream(index) -> id of the device's default stream"),
    M(stream_create, METH_VARARGS, "stream_create(index) -> id of a new stream (a new worker thread)"),
    M(current_stream, METH_VARARGS, "current_stream(index) -> id of this thread's current stream"),
    M(set_current_stream, METH_VARARGS, "set_current_stream(index, id): this thread's current stream"),
    M(stream_stall, METH_VARARGS, "stream_stall(id, us): queue an operation that keeps the stream busy"),
    M(set_delay, METH_VARARGS, "set_delay(delay_us, jitter_us) -> the previous (delay_us, jitter_us)"),
    M(get_delay, METH_NOARGS, "get_delay() -> (delay_us, jitter_us)"),
    M(synchronize, METH_VARARGS, "synchronize(index): table synchronize"),
    M(synchronize_stream, METH_VARARGS, "synchronize_stream(index, stream)"),
    M(get_current_device, METH_NOARGS, "get_current_device() -> this thread's current hostdev index"),
    M(set_current_device, METH_VARARGS, "set_current_device(index)"),
    M(stream_to_dlpack, METH_VARARGS, "stream_to_dlpack(index, stream) -> DLPack integer"),
    M(stream_from_dlpack, METH_VARARGS, "stream_from_dlpack(index, value) -> stream id"),
    M(raw_allocate, METH_VARARGS, "raw_allocate(index, nbytes, stream=None) -> token"),
    M(raw_free, METH_VARARGS, "raw_free(index, token, nbytes, stream=None)"),
    M(raw_write, METH_VARARGS, "raw_write(index, token, offset, data, stream=None): blocking copy_from_host"),
    M(raw_read, METH_VARARGS, "raw_read(index, token, offset, nbytes, stream=None) -> bytes: blocking copy_to_host"),
    M(raw_copy, METH_VARARGS, "raw_copy(dst_index, dst, dst_offset, src_index, src, src_offset, nbytes, stream=None)"),
    M(raw_fill, METH_VARARGS, "raw_fill(index, token, offset, nbytes, pattern, stream=None)"),
    M(raw_record_stream, METH_VARARGS, "raw_record_stream(index, token, stream)"),
    M(event_create, METH_VARARGS, "event_create(index) -> event"),
    M(event_destroy, METH_VARARGS, "event_destroy(index, event)"),
    M(event_record, METH_VARARGS, "event_record(index, event, stream=None)"),
    M(stream_wait_event, METH_VARARGS, "stream_wait_event(index, stream, event)"),
    M(event_synchronize, METH_VARARGS, "event_synchronize(index, event)"),
    M(locate_pointer, METH_VARARGS, "locate_pointer(ptr) -> device index (ValueError: not hostdev memory)"),
    M(host_allocate, METH_VARARGS, "host_allocate(nbytes) -> address of pinned host memory"),
    M(host_free, METH_VARARGS, "host_free(ptr, nbytes)"),
    M(host_is_pinned, METH_VARARGS, "host_is_pinned(ptr) -> bool"),
    M(pinned_stats, METH_NOARGS, "pinned_stats() -> {bytes, blocks} of live host_allocate memory"),
    M(allocator_stats, METH_VARARGS, "allocator_stats(index) -> dict (the table's allocator_stats)"),
    {NULL, NULL, 0, NULL},
};

static int exec_module(PyObject* m) {
  if (PyModule_AddStringConstant(m, "DEVICE_NAME", HOSTDEV_NAME) < 0) return -1;
  if (PyModule_AddIntConstant(m, "DEVICE_TYPE", HOSTDEV_DEVICE_TYPE) < 0) return -1;
  if (PyModule_AddIntConstant(m, "DLPACK_DEVICE_TYPE", HOSTDEV_DLPACK_DEVICE_TYPE) < 0) return -1;
  if (PyModule_AddIntConstant(m, "DEVICE_COUNT", HOSTDEV_DEVICE_COUNT) < 0) return -1;
  if (PyModule_AddIntConstant(m, "ABI_MAJOR", ST_PLUGIN_ABI_MAJOR) < 0) return -1;
  if (PyModule_AddIntConstant(m, "ABI_MINOR", ST_PLUGIN_ABI_MINOR) < 0) return -1;
  if (PyModule_AddIntConstant(m, "TABLE_SIZE", (long)sizeof(st_device_table)) < 0) return -1;
  if (PyModule_AddIntConstant(m, "TABLE_SIZE_1_0", (long)ST_DEVICE_TABLE_SIZE_1_0) < 0) return -1;
  if (PyModule_AddIntConstant(m, "TABLE_SIZE_1_1", (long)ST_DEVICE_TABLE_SIZE_1_1) < 0) return -1;
  if (PyModule_AddStringConstant(m, "ABI10_DEVICE_NAME", HOSTDEV_ABI10_NAME) < 0) return -1;
  if (PyModule_AddIntConstant(m, "ABI10_DEVICE_TYPE", HOSTDEV_ABI10_DEVICE_TYPE) < 0) return -1;
  if (PyModule_AddIntConstant(m, "ABI10_TABLE_SIZE", (long)hostdev_abi10_table_size()) < 0) return -1;
  if (PyModule_AddIntConstant(m, "ABI10_MINOR", (long)hostdev_abi10_minor()) < 0) return -1;
  if (PyModule_AddStringConstant(m, "ABSENT_ENV", HOSTDEV_ABSENT_ENV) < 0) return -1;
  if (PyModule_AddStringConstant(m, "CAPACITY_ENV", HOSTDEV_CAPACITY_ENV) < 0) return -1;
  if (PyModule_AddStringConstant(m, "DELAY_ENV", HOSTDEV_DELAY_ENV) < 0) return -1;
  if (PyModule_AddStringConstant(m, "JITTER_ENV", HOSTDEV_JITTER_ENV) < 0) return -1;
  return 0;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, (void*)exec_module},
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_hostdev",
    "The hostdev test device plugin (C, plugin ABI only).",
    0,
    methods,
    slots,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__hostdev(void) { return PyModuleDef_Init(&module); }
