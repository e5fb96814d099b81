/* layout.h — the normalised description of one CPython build's memory
 * layout: every offset and constant the walker uses, whatever its source
 * (a built-in table for 3.11/3.12, the target's _Py_DebugOffsets plus
 * built-in knowledge for 3.13+).  FPI_OFF_NONE marks a field the build lacks.
 */
#ifndef FPI_LAYOUT_H
#define FPI_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fpi_limits.h"

#define FPI_OFF_NONE (-1)

/* The target's pointer and word size: 64-bit targets only. */
#define FPI_PTR_SIZE 8u
/* Bytes of a data-stack chunk's header (_PyStackChunk's previous, size
 * and top): where its data, chunk_data, starts in every supported version. */
#define FPI_CHUNK_HEADER 24u

typedef struct fpi_layout {
    uint32_t hexversion;          /* of the target */
    uint32_t minor;               /* 11..15: whose built-in knowledge applies (the
                                   * newest for an allowed untested target) */
    bool free_threaded;
    bool debug;
    bool from_debug_offsets;      /* fields came from the target's own table */

    /* _PyRuntimeState */
    int32_t rt_interpreters_head;
    int32_t rt_gil_locked;        /* 3.11: runtime-wide GIL */
    int32_t rt_gil_last_holder;
    int32_t rt_main_thread;       /* 3.11/3.12: pthread id of the main thread */

    /* PyInterpreterState */
    int32_t interp_size;
    int32_t interp_next, interp_id, interp_threads_head, interp_threads_main;
    int32_t interp_ceval_gil;     /* pointer to struct _gil_runtime_state (3.12+) */
    int32_t interp_code_generation; /* uint64 (3.14+) */
    int32_t interp_tlbc_generation; /* uint32 (FT 3.14+) */
    int32_t interp_modules;       /* sys.modules, a dict (read by async_legacy.c) */
    int32_t gil_locked, gil_last_holder; /* inside struct _gil_runtime_state */

    /* PyThreadState */
    int32_t ts_size;
    int32_t ts_next, ts_interp;
    int32_t ts_cframe, cframe_current_frame; /* 3.11/3.12 */
    int32_t ts_root_cframe;                  /* 3.11/3.12: the thread state's own _PyCFrame (no evaluation running) */
    int32_t ts_current_frame;                /* 3.13+ */
    int32_t ts_base_frame;                   /* 3.15+ */
    int32_t ts_thread_id, ts_native_thread_id;
    int32_t ts_datastack_chunk, ts_datastack_top;
    int32_t ts_status;                       /* 3.12+ bitfield word */
    int32_t ts_holds_gil;                    /* int (3.14+) */
    int32_t ts_gil_requested;                /* int (3.15+) */
    int32_t ts_current_exception;            /* 3.12+; 3.11: curexc_type */
    int32_t ts_exc_info;                     /* _PyErr_StackItem * */
    int32_t ts_exc_state;                    /* the embedded base _PyErr_StackItem */
    int32_t err_exc_value;                   /* inside _PyErr_StackItem */

    /* _PyStackChunk */
    int32_t chunk_previous, chunk_size, chunk_top, chunk_data;

    /* _PyInterpreterFrame */
    int32_t fr_size;
    int32_t fr_executable, fr_previous, fr_instr_ptr, fr_owner;
    int32_t fr_is_entry;                     /* 3.11 */
    /* 3.11: a generator's gi_frame_state sits this many bytes before its
     * embedded frame (FPI_OFF_NONE: not checked; later versions end every
     * chain at an entry frame, which a suspended generator frame is not). */
    int32_t gen_state_before_frame;
    int gen_state_executing;
    int32_t fr_tlbc_index;                   /* FT 3.14+ */
    /* 3.11-3.13: int stacktop, -1 while the frame runs (its evaluation
     * holds the stack pointer), the stack depth once it stopped to call or
     * return; 3.13's return clears it to 0, under the co_nlocalsplus a
     * frame in use never goes below.  FPI_OFF_NONE from 3.14 (which
     * clears a returned frame's f_executable instead). */
    int32_t fr_stacktop;
    /* 3.14+: _PyStackRef *stackpointer, the stack top a frame saved when it
     * last stopped (to call, or for any escaping call: a running frame's is
     * stale in release builds; debug builds clear it to NULL while the frame
     * runs); FPI_OFF_NONE before 3.14. */
    int32_t fr_stackpointer;
    /* The frame's function object (3.11 f_func, then f_funcobj; 3.14+ a
     * tagged stack reference) and its localsplus array, whose slot at a
     * suspended caller's stack depth (stacktop, or the stack pointer) holds
     * the function its CALL called (call_sites.c). */
    int32_t fr_funcobj, fr_localsplus;
    /* What proves a chain greenlet rewrote for a switch (stack_switch.c):
     * the frame's frame_obj, and in a frame object (PyFrameObject) its
     * f_frame and the first word of its _f_frame_data, where greenlet
     * keeps the frame's own link; FPI_OFF_NONE on 3.11, where greenlet
     * rewrites no links. */
    int32_t fr_frame_obj, fo_frame, fo_frame_data;
    bool instr_is_prev;                      /* 3.11/3.12 prev_instr semantics */
    uint64_t executable_tag_mask;            /* _PyStackRef tag bits (3.14+) */
    int owner_thread, owner_generator, owner_frame_object;
    int owner_cstack;                        /* -1 when the version has none */
    int owner_interpreter;                   /* -1 when the version has none */

    /* PyCodeObject */
    int32_t co_size;
    int32_t co_flags, co_firstlineno, co_filename, co_name, co_qualname, co_linetable;
    int32_t co_firsttraceable, co_code_adaptive, co_tlbc;
    int32_t co_nlocalsplus;                  /* 3.13 (see fr_stacktop), else FPI_OFF_NONE */

    /* objects */
    int32_t ob_type, ob_size, tp_name;
    /* PyMethodObject's im_func (im_self the next word), where a caller
     * suspended in a call keeps the bound method object it called at its
     * stack depth instead of the function (3.13 GIL builds'
     * CALL_BOUND_METHOD_GENERAL: emit.c); FPI_OFF_NONE elsewhere. */
    int32_t meth_im_func;
    int32_t bytes_sval;
    int32_t uni_length, uni_state, uni_ascii_size, uni_compact_size;
    /* What asyncio's task graph is read through (async_graph.c), from the
     * 3.14+ debug tables; FPI_OFF_NONE before 3.14. */
    int32_t tp_flags;                        /* unsigned long, in a type object */
    int32_t set_used, set_mask, set_table;   /* PySetObject */
    int32_t long_lv_tag, long_digits;        /* PyLongObject, the 3.12+ tagged form */
    int32_t gen_iframe, gen_frame_state;     /* PyGenObject: its embedded frame, its int8 state */
    /* state word bit positions */
    uint32_t uni_kind_shift, uni_compact_bit, uni_ascii_bit;
} fpi_layout;

/* Built-in tables. */
const fpi_layout *fpi_layout_builtin_311(void);
const fpi_layout *fpi_layout_builtin_312(void);

/* Fills the fields of a 3.13+ layout that the target's _Py_DebugOffsets
 * does not carry (after fpi_debug_offsets_parse filled the rest).  Returns
 * 0 or FP_E_UNSUPPORTED. */
int fpi_layout_add_builtin_extras(fpi_layout *l, char *err, size_t errlen);

/* Checks that every field the walker reads lies inside the bytes it copies
 * for its structure.  Returns 0 or FP_E_CORRUPT with a message. */
int fpi_layout_check(const fpi_layout *l, char *err, size_t errlen);

#endif /* FPI_LAYOUT_H */
