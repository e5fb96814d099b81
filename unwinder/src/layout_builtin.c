/* layout_builtin.c — built-in layout knowledge: the complete tables of 3.11
 * and 3.12 (which have no _Py_DebugOffsets) and, for 3.13–3.15, the fields
 * their debug tables lack.  Values were computed with offsetof() against
 * each version's internal headers (targets/layouts/dump_layout.c) for
 * x86-64 Linux; debug builds share them. */
#include <stdio.h>
#include <string.h>

#include "frameproof/frameproof.h"
#include "fp_facts.h"
#include "fp_error.h"
#include "layout.h"
#include "versions.h"

/* Enumerations that are not offsets. */
#define OWNER_THREAD 0
#define OWNER_GENERATOR 1
#define OWNER_FRAME_OBJECT 2
#define OWNER_BOUNDARY 3 /* CSTACK in 3.12/3.13, INTERPRETER in 3.14+ */
#define OWNER_CSTACK_314 4

/* PyASCIIObject.state bit positions. */
#define UNI_KIND_SHIFT 2
#define UNI_COMPACT_BIT 5
#define UNI_ASCII_BIT 6
#define UNI_KIND_SHIFT_FT314 8
#define UNI_COMPACT_BIT_FT314 11
#define UNI_ASCII_BIT_FT314 12

/* _PyStackRef tag bits. */
#define STACKREF_TAG_GIL 3u
#define STACKREF_TAG_FT314 1u

/* Offsets shared by 3.11 and 3.12 object headers (GIL builds). */
#define GIL_OB_TYPE 8
#define GIL_OB_SIZE 16
#define GIL_TP_NAME 24
#define GIL_TP_FLAGS 168       /* 3.11-3.13; free-threaded 3.13: 16 bytes further */
#define FT_HEADER_GROWTH 16    /* a free-threaded object header's extra bytes (3.13) */
#define GIL_BYTES_SVAL 32
#define GIL_UNI_LENGTH 16
#define GIL_UNI_STATE 32
/* 3.11's PyGenObject: int8_t gi_frame_state at 75, the frame at 80; FRAME_EXECUTING = 0. */
#define GEN_STATE_BEFORE_FRAME 5
#define GEN_EXECUTING_311 0
/* The last version whose frames keep an int stacktop (-1 while running),
 * and the one whose return clears it to 0 (_PyFrame_ClearLocals); checked
 * on the 3.11, 3.12, 3.13, 3.13d, 3.13t and 3.13.0 builds. */
#define CLEARS_STACKTOP_MINOR 13u
/* Free-threaded builds have a 32-byte object header. */
#define FT_HEADER_GROWTH 16

static const fpi_layout layout_311 = {
    .hexversion = 0x030b00f0, .minor = 11,
    .rt_interpreters_head = 40, .rt_gil_locked = 376, .rt_gil_last_holder = 368, .rt_main_thread = 80,
    .interp_size = 107752, .interp_next = 0, .interp_id = 48, .interp_threads_head = 16,
    .interp_threads_main = FPI_OFF_NONE, .interp_ceval_gil = FPI_OFF_NONE,
    .interp_code_generation = FPI_OFF_NONE, .interp_tlbc_generation = FPI_OFF_NONE, .interp_modules = 888,
    .gil_locked = FPI_OFF_NONE, .gil_last_holder = FPI_OFF_NONE,
    .ts_size = 360, .ts_next = 8, .ts_interp = 16, .ts_cframe = 56, .cframe_current_frame = 8, .ts_root_cframe = 336,
    .ts_current_frame = FPI_OFF_NONE, .ts_base_frame = FPI_OFF_NONE,
    .ts_thread_id = 152, .ts_native_thread_id = 160, .ts_datastack_chunk = 296, .ts_datastack_top = 304,
    .ts_status = FPI_OFF_NONE, .ts_holds_gil = FPI_OFF_NONE, .ts_gil_requested = FPI_OFF_NONE,
    .ts_current_exception = 96, .ts_exc_info = 120, .ts_exc_state = 320, .err_exc_value = 0,
    .chunk_previous = 0, .chunk_size = 8, .chunk_top = 16, .chunk_data = FPI_CHUNK_HEADER,
    .fr_size = 80, .fr_executable = 32, .fr_previous = 48, .fr_instr_ptr = 56, .fr_owner = 69,
    .fr_is_entry = 68, .fr_tlbc_index = FPI_OFF_NONE, .fr_stacktop = 64, .fr_funcobj = 0, .fr_localsplus = 72,
    .fr_stackpointer = FPI_OFF_NONE, .fr_frame_obj = FPI_OFF_NONE, .fo_frame = FPI_OFF_NONE,
    .fo_frame_data = FPI_OFF_NONE,
    .instr_is_prev = true,
    .executable_tag_mask = 0,
    .gen_state_before_frame = GEN_STATE_BEFORE_FRAME, .gen_state_executing = GEN_EXECUTING_311,
    .owner_thread = OWNER_THREAD, .owner_generator = OWNER_GENERATOR, .owner_frame_object = OWNER_FRAME_OBJECT,
    .owner_cstack = -1, .owner_interpreter = -1,
    .co_size = 192, .co_flags = 48, .co_firstlineno = 72, .co_filename = 112, .co_name = 120,
    .co_qualname = 128, .co_linetable = 136, .co_firsttraceable = 168, .co_code_adaptive = 184,
    .co_tlbc = FPI_OFF_NONE, .co_nlocalsplus = FPI_OFF_NONE, .meth_im_func = FPI_OFF_NONE,
    .tp_flags = GIL_TP_FLAGS, .set_used = FPI_OFF_NONE, .set_mask = FPI_OFF_NONE, .set_table = FPI_OFF_NONE,
    .long_lv_tag = FPI_OFF_NONE, .long_digits = FPI_OFF_NONE, .gen_iframe = FPI_OFF_NONE, .gen_frame_state = FPI_OFF_NONE,
    .ob_type = GIL_OB_TYPE, .ob_size = GIL_OB_SIZE, .tp_name = GIL_TP_NAME, .bytes_sval = GIL_BYTES_SVAL,
    .uni_length = GIL_UNI_LENGTH, .uni_state = GIL_UNI_STATE, .uni_ascii_size = 48, .uni_compact_size = 72,
    .uni_kind_shift = UNI_KIND_SHIFT, .uni_compact_bit = UNI_COMPACT_BIT, .uni_ascii_bit = UNI_ASCII_BIT,
};

static const fpi_layout layout_312 = {
    .hexversion = 0x030c00f0, .minor = 12,
    .rt_interpreters_head = 40, .rt_gil_locked = FPI_OFF_NONE, .rt_gil_last_holder = FPI_OFF_NONE, .rt_main_thread = 64,
    .interp_size = 383552, .interp_next = 0, .interp_id = 8, .interp_threads_head = 72,
    .interp_threads_main = FPI_OFF_NONE, .interp_ceval_gil = 384,
    .interp_code_generation = FPI_OFF_NONE, .interp_tlbc_generation = FPI_OFF_NONE, .interp_modules = 944,
    .gil_locked = 16, .gil_last_holder = 8,
    .ts_size = 288, .ts_next = 8, .ts_interp = 16, .ts_cframe = 56, .cframe_current_frame = 0, .ts_root_cframe = 272,
    .ts_current_frame = FPI_OFF_NONE, .ts_base_frame = FPI_OFF_NONE,
    .ts_thread_id = 136, .ts_native_thread_id = 144, .ts_datastack_chunk = 232, .ts_datastack_top = 240,
    .ts_status = 24, .ts_holds_gil = FPI_OFF_NONE, .ts_gil_requested = FPI_OFF_NONE,
    .ts_current_exception = 96, .ts_exc_info = 104, .ts_exc_state = 256, .err_exc_value = 0,
    .chunk_previous = 0, .chunk_size = 8, .chunk_top = 16, .chunk_data = FPI_CHUNK_HEADER,
    .fr_size = 80, .fr_executable = 0, .fr_previous = 8, .fr_instr_ptr = 56, .fr_owner = 70,
    .fr_is_entry = FPI_OFF_NONE, .fr_tlbc_index = FPI_OFF_NONE, .fr_stacktop = 64, .fr_funcobj = 16,
    .fr_localsplus = 72, .fr_stackpointer = FPI_OFF_NONE, .instr_is_prev = true,
    .fr_frame_obj = 48, .fo_frame = GIL_OB_TYPE + 16, .fo_frame_data = GIL_OB_TYPE + 8 + 40,
    .executable_tag_mask = 0,
    .gen_state_before_frame = FPI_OFF_NONE,
    .owner_thread = OWNER_THREAD, .owner_generator = OWNER_GENERATOR, .owner_frame_object = OWNER_FRAME_OBJECT,
    .owner_cstack = OWNER_BOUNDARY, .owner_interpreter = -1,
    .co_size = 200, .co_flags = 48, .co_firstlineno = 68, .co_filename = 112, .co_name = 120,
    .co_qualname = 128, .co_linetable = 136, .co_firsttraceable = 176, .co_code_adaptive = 192,
    .co_tlbc = FPI_OFF_NONE, .co_nlocalsplus = FPI_OFF_NONE, .meth_im_func = FPI_OFF_NONE,
    .tp_flags = GIL_TP_FLAGS, .set_used = FPI_OFF_NONE, .set_mask = FPI_OFF_NONE, .set_table = FPI_OFF_NONE,
    .long_lv_tag = FPI_OFF_NONE, .long_digits = FPI_OFF_NONE, .gen_iframe = FPI_OFF_NONE, .gen_frame_state = FPI_OFF_NONE,
    .ob_type = GIL_OB_TYPE, .ob_size = GIL_OB_SIZE, .tp_name = GIL_TP_NAME, .bytes_sval = GIL_BYTES_SVAL,
    .uni_length = GIL_UNI_LENGTH, .uni_state = GIL_UNI_STATE, .uni_ascii_size = 40, .uni_compact_size = 56,
    .uni_kind_shift = UNI_KIND_SHIFT, .uni_compact_bit = UNI_COMPACT_BIT, .uni_ascii_bit = UNI_ASCII_BIT,
};

const fpi_layout *fpi_layout_builtin_311(void) { return &layout_311; }
const fpi_layout *fpi_layout_builtin_312(void) { return &layout_312; }

/* Per-minor facts for 3.13+ that _Py_DebugOffsets does not carry. */
typedef struct extras {
    uint32_t minor;
    int32_t ts_datastack_top, ts_exc_info, ts_exc_state, ts_current_exception, ts_holds_gil;
    int32_t co_firsttraceable_gil; /* +FT_HEADER_GROWTH in free-threaded builds */
    int owner_cstack, owner_interpreter;
    int32_t meth_im_func_gil; /* FPI_OFF_NONE in free-threaded builds, which do not specialise calls */
    int32_t fo_frame_data_after_head; /* a frame object's _f_frame_data, after its object header */
} extras;

static const extras extras_table[] = {
    {13, 240, 120, 256, 112, FPI_OFF_NONE, 184, OWNER_BOUNDARY, -1, 16 /* after the object header */, 48},
    {14, 240, 120, 256, 112, 36, 192, OWNER_CSTACK_314, OWNER_BOUNDARY, FPI_OFF_NONE, 56},
    {15, 264, 144, 288, FPI_OFF_NONE /* in the table */, FPI_OFF_NONE /* in the table */, 192, -1, OWNER_BOUNDARY,
     FPI_OFF_NONE, 56},
};

int fpi_layout_add_builtin_extras(fpi_layout *l, char *err, size_t errlen)
{
    const extras *x = NULL;
    for (size_t i = 0; i < sizeof extras_table / sizeof extras_table[0]; i++)
        if (extras_table[i].minor == l->minor)
            x = &extras_table[i];
    if (!x)
        return fpi_msg_unsupported(err, errlen, FPI_PY_MAJOR, l->minor);
    int32_t grow = l->free_threaded ? FT_HEADER_GROWTH : 0;
    l->ts_datastack_top = x->ts_datastack_top;
    l->ts_exc_info = x->ts_exc_info;
    if (l->ts_exc_state == FPI_OFF_NONE)
        l->ts_exc_state = x->ts_exc_state;
    if (x->ts_current_exception != FPI_OFF_NONE)
        l->ts_current_exception = x->ts_current_exception;
    if (x->ts_holds_gil != FPI_OFF_NONE)
        l->ts_holds_gil = x->ts_holds_gil;
    if (l->interp_threads_main == FPI_OFF_NONE)
        l->interp_threads_main = l->interp_threads_head + 8; /* 3.13: threads.main follows threads.head */
    l->err_exc_value = 0;
    l->ts_cframe = FPI_OFF_NONE;
    l->ts_root_cframe = FPI_OFF_NONE;
    l->cframe_current_frame = FPI_OFF_NONE;
    l->fr_is_entry = FPI_OFF_NONE;
    l->gen_state_before_frame = FPI_OFF_NONE;
    l->rt_gil_locked = FPI_OFF_NONE;
    l->rt_gil_last_holder = FPI_OFF_NONE;
    /* _PyRuntime.main_thread follows interpreters.{head,main,next_id} in 3.13+ */
    l->rt_main_thread = l->rt_interpreters_head + 24;
    l->chunk_previous = 0;
    l->chunk_size = 8;
    l->chunk_top = 16;
    l->chunk_data = FPI_CHUNK_HEADER;
    l->instr_is_prev = false;
    l->owner_thread = OWNER_THREAD;
    l->owner_generator = OWNER_GENERATOR;
    l->owner_frame_object = OWNER_FRAME_OBJECT;
    l->owner_cstack = x->owner_cstack;
    l->owner_interpreter = x->owner_interpreter;
    l->co_flags = l->co_firstlineno - 20; /* co_flags sits 20 bytes before co_firstlineno in 3.12+ */
    l->fr_funcobj = l->fr_previous + 8;              /* f_funcobj follows previous in 3.13+ */
    l->fr_frame_obj = l->fr_instr_ptr - 8;           /* frame_obj precedes instr_ptr in 3.12+ */
    l->fo_frame = l->ob_type + 16;                   /* f_back, then f_frame, after the object header */
    l->fo_frame_data = l->ob_type + 8 + x->fo_frame_data_after_head;
    if (l->minor == CLEARS_STACKTOP_MINOR) {
        l->fr_stacktop = l->fr_instr_ptr + 8;        /* int stacktop follows instr_ptr */
        l->co_nlocalsplus = l->co_firstlineno + 4;   /* co_nlocalsplus follows co_firstlineno */
        l->fr_localsplus = l->fr_stacktop + 8;       /* after stacktop, return_offset, owner */
        l->fr_stackpointer = FPI_OFF_NONE;
    } else {
        /* 3.14+: localsplus and stackpointer come from the table. */
        l->fr_stacktop = FPI_OFF_NONE;
        l->co_nlocalsplus = FPI_OFF_NONE;
    }
    l->co_firsttraceable = x->co_firsttraceable_gil + grow;
    l->meth_im_func = l->free_threaded ? FPI_OFF_NONE : x->meth_im_func_gil;
    if (l->tp_flags == FPI_OFF_NONE && l->minor == CLEARS_STACKTOP_MINOR) /* 3.13's table has no tp_flags */
        l->tp_flags = GIL_TP_FLAGS + (l->free_threaded ? FT_HEADER_GROWTH : 0);
    if (l->uni_compact_size == FPI_OFF_NONE)
        l->uni_compact_size = l->uni_ascii_size + 16; /* utf8_length + utf8 */
    if (l->free_threaded && l->minor >= 14) {
        l->uni_kind_shift = UNI_KIND_SHIFT_FT314;
        l->uni_compact_bit = UNI_COMPACT_BIT_FT314;
        l->uni_ascii_bit = UNI_ASCII_BIT_FT314;
        l->executable_tag_mask = l->minor == 14 ? STACKREF_TAG_FT314 : STACKREF_TAG_GIL;
    } else {
        l->uni_kind_shift = UNI_KIND_SHIFT;
        l->uni_compact_bit = UNI_COMPACT_BIT;
        l->uni_ascii_bit = UNI_ASCII_BIT;
        l->executable_tag_mask = l->minor >= 14 ? STACKREF_TAG_GIL : 0;
    }
    return fpi_layout_check(l, err, errlen);
}
