/* dump_layout.c — prints the structure offsets libframeproof needs, computed
 * with offsetof() against one CPython version's internal headers.
 *
 * Build (one per version; add -DPy_GIL_DISABLED=1 for free-threaded):
 *   cc -DPy_BUILD_CORE=1 -I INCLUDE -I INCLUDE/internal dump_layout.c
 * The output is "name value" lines; targets/layouts/gen_tables turns them
 * into unwinder/src/layout_3XX.c.  Only the fields a version has are printed.
 */
#define Py_BUILD_CORE 1
#include <stddef.h>
#include <stdio.h>
#include "Python.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#include "internal/pycore_frame.h"
#include "internal/pycore_code.h"
#if PY_VERSION_HEX >= 0x030E0000
#include "internal/pycore_interpframe_structs.h"
#include "internal/pycore_tstate.h"
#endif
#if PY_VERSION_HEX >= 0x030D0000
#include "internal/pycore_tstate.h"
#endif

#define P(name, val) printf("%s %ld\n", name, (long)(val))

int main(void)
{
    P("hexversion", PY_VERSION_HEX);
#ifdef Py_GIL_DISABLED
    P("free_threaded", 1);
#else
    P("free_threaded", 0);
#endif
    P("runtime.interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
#if PY_VERSION_HEX < 0x030C0000
    P("runtime.gil_locked", offsetof(_PyRuntimeState, ceval.gil.locked));
    P("runtime.gil_last_holder", offsetof(_PyRuntimeState, ceval.gil.last_holder));
    P("runtime.tstate_current", offsetof(_PyRuntimeState, gilstate.tstate_current));
#endif
    P("interp.size", sizeof(PyInterpreterState));
    P("interp.next", offsetof(PyInterpreterState, next));
    P("interp.id", offsetof(PyInterpreterState, id));
    P("interp.threads_head", offsetof(PyInterpreterState, threads.head));
#if PY_VERSION_HEX >= 0x030D0000
    P("interp.threads_main", offsetof(PyInterpreterState, threads.main));
#endif
#if PY_VERSION_HEX >= 0x030C0000
    P("interp.ceval_gil", offsetof(PyInterpreterState, ceval.gil));
    P("gil.locked", offsetof(struct _gil_runtime_state, locked));
    P("gil.last_holder", offsetof(struct _gil_runtime_state, last_holder));
#endif
    P("tstate.size", sizeof(PyThreadState));
    P("tstate.prev", offsetof(PyThreadState, prev));
    P("tstate.next", offsetof(PyThreadState, next));
    P("tstate.interp", offsetof(PyThreadState, interp));
#if PY_VERSION_HEX < 0x030D0000
    P("tstate.cframe", offsetof(PyThreadState, cframe));
    P("cframe.current_frame", offsetof(_PyCFrame, current_frame));
#else
    P("tstate.current_frame", offsetof(PyThreadState, current_frame));
#endif
#if PY_VERSION_HEX >= 0x030F0000
    P("tstate.base_frame", offsetof(PyThreadState, base_frame));
#endif
#if PY_VERSION_HEX >= 0x030E0000
    P("tstate.holds_gil", offsetof(PyThreadState, holds_gil));
#endif
#if PY_VERSION_HEX >= 0x030C0000
    P("tstate.status", offsetof(PyThreadState, _status));
    P("tstate.current_exception", offsetof(PyThreadState, current_exception));
#else
    P("tstate.curexc_type", offsetof(PyThreadState, curexc_type));
#endif
    P("tstate.exc_info", offsetof(PyThreadState, exc_info));
    P("tstate.exc_state", offsetof(PyThreadState, exc_state));
    P("tstate.thread_id", offsetof(PyThreadState, thread_id));
    P("tstate.native_thread_id", offsetof(PyThreadState, native_thread_id));
    P("tstate.datastack_chunk", offsetof(PyThreadState, datastack_chunk));
    P("tstate.datastack_top", offsetof(PyThreadState, datastack_top));
    P("err_stackitem.exc_value", offsetof(_PyErr_StackItem, exc_value));
    P("chunk.previous", offsetof(_PyStackChunk, previous));
    P("chunk.size", offsetof(_PyStackChunk, size));
    P("chunk.data", offsetof(_PyStackChunk, data));
    P("frame.size", sizeof(_PyInterpreterFrame));
#if PY_VERSION_HEX < 0x030D0000
    P("frame.executable", offsetof(_PyInterpreterFrame, f_code));
    P("frame.instr_ptr", offsetof(_PyInterpreterFrame, prev_instr));
#else
    P("frame.executable", offsetof(_PyInterpreterFrame, f_executable));
    P("frame.instr_ptr", offsetof(_PyInterpreterFrame, instr_ptr));
#endif
    P("frame.previous", offsetof(_PyInterpreterFrame, previous));
    P("frame.owner", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030C0000
    P("frame.is_entry", offsetof(_PyInterpreterFrame, is_entry));
#endif
#if PY_VERSION_HEX >= 0x030E0000
    P("frame.stackpointer", offsetof(_PyInterpreterFrame, stackpointer));
#ifdef Py_GIL_DISABLED
    P("frame.tlbc_index", offsetof(_PyInterpreterFrame, tlbc_index));
#endif
#endif
    P("frame.localsplus", offsetof(_PyInterpreterFrame, localsplus));
#if PY_VERSION_HEX < 0x030C0000
    P("frame.funcobj", offsetof(_PyInterpreterFrame, f_func));
#else
    P("frame.funcobj", offsetof(_PyInterpreterFrame, f_funcobj));
#endif
    P("code.size", sizeof(PyCodeObject));
    P("code.flags", offsetof(PyCodeObject, co_flags));
    P("code.firstlineno", offsetof(PyCodeObject, co_firstlineno));
    P("code.filename", offsetof(PyCodeObject, co_filename));
    P("code.name", offsetof(PyCodeObject, co_name));
    P("code.qualname", offsetof(PyCodeObject, co_qualname));
    P("code.linetable", offsetof(PyCodeObject, co_linetable));
    P("code.firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
    P("code.code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#if PY_VERSION_HEX >= 0x030E0000 && defined(Py_GIL_DISABLED)
    P("code.tlbc", offsetof(PyCodeObject, co_tlbc));
#endif
    P("object.ob_type", offsetof(PyObject, ob_type));
    P("varobject.ob_size", offsetof(PyVarObject, ob_size));
    P("type.tp_name", offsetof(PyTypeObject, tp_name));
    P("bytes.ob_sval", offsetof(PyBytesObject, ob_sval));
    P("unicode.length", offsetof(PyASCIIObject, length));
    P("unicode.state", offsetof(PyASCIIObject, state));
    P("unicode.ascii_size", sizeof(PyASCIIObject));
    P("unicode.compact_size", sizeof(PyCompactUnicodeObject));
    P("unicode.data_any", offsetof(PyUnicodeObject, data.any));
    P("gen.frame_state", offsetof(PyGenObject, gi_frame_state));
    P("gen.iframe", offsetof(PyGenObject, gi_iframe));
    return 0;
}
