// py_owner.cpp: deleters for memory that Python objects own; safe without the GIL and at shutdown.
#include "common.h"

namespace slimtensor::python {

// At interpreter shutdown the objects may already be gone: then the reference is deliberately leaked,
// which is harmless because the process is exiting, where touching Python would crash it.
bool python_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

void release_python_owner(void*, void* context) {
  if (!context || !python_alive()) return;
  PyGILState_STATE state = PyGILState_Ensure();
  Py_DECREF(static_cast<PyObject*>(context));
  PyGILState_Release(state);
}

void release_python_buffer(void*, void* context) {
  if (!context || !python_alive()) return;
  PyGILState_STATE state = PyGILState_Ensure();
  auto* view = static_cast<Py_buffer*>(context);
  PyBuffer_Release(view);
  delete view;
  PyGILState_Release(state);
}

}  // namespace slimtensor::python
