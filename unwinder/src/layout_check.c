/* layout_check.c — the last line of defence between a layout (from an
 * untrusted _Py_DebugOffsets table plus built-in knowledge) and the walker:
 * every field the walker reads must lie inside the bytes it copies for that
 * structure, and inside the structure's own size.  Each rule names the copy
 * it protects. */
#include <stdio.h>

#include "frameproof/frameproof.h"
#include "fp_error.h"
#include "layout.h"

#define PTR FPI_PTR_SIZE /* field widths a check asks room for */
#define U32 4
#define U8 1

typedef struct checker {
    char *err;
    size_t errlen;
    int failed;
} checker;

static void need(checker *c, const char *what, int32_t off, int width, int64_t limit)
{
    if (c->failed || off == FPI_OFF_NONE)
        return;
    if (off < 0 || (int64_t)off + width > limit) {
        fpi_msg(c->err, c->errlen, FP_E_CORRUPT, "layout: %s at %d (+%d) lies outside the %lld bytes read for it", what,
                off, width, (long long)limit);
        c->failed = 1;
    }
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

int fpi_layout_check(const fpi_layout *l, char *err, size_t errlen)
{
    checker c = {err, errlen, 0};

    /* Thread state: the walker copies max(field) + 8 bytes into a
     * FPI_MAX_STRUCT_READ buffer; the copy must also stay inside ts_size. */
    int64_t ts = min64(l->ts_size, FPI_MAX_STRUCT_READ);
    need(&c, "ts_size", 0, 1, l->ts_size > 0 ? FPI_MAX_STRUCT_READ + 1 : 0);
    need(&c, "ts_next", l->ts_next, PTR, ts);
    need(&c, "ts_interp", l->ts_interp, PTR, ts);
    need(&c, "ts_cframe", l->ts_cframe, PTR, ts);
    need(&c, "ts_current_frame", l->ts_current_frame, PTR, ts);
    need(&c, "ts_base_frame", l->ts_base_frame, PTR, ts);
    need(&c, "ts_thread_id", l->ts_thread_id, PTR, ts);
    need(&c, "ts_native_thread_id", l->ts_native_thread_id, PTR, ts);
    need(&c, "ts_datastack_chunk", l->ts_datastack_chunk, PTR, ts);
    need(&c, "ts_datastack_top", l->ts_datastack_top, PTR, ts);
    need(&c, "ts_status", l->ts_status, U32, ts);
    need(&c, "ts_holds_gil", l->ts_holds_gil, U32, ts);
    need(&c, "ts_gil_requested", l->ts_gil_requested, U32, ts);
    need(&c, "ts_current_exception", l->ts_current_exception, PTR, ts);
    need(&c, "ts_exc_info", l->ts_exc_info, PTR, ts);
    if (l->ts_exc_state != FPI_OFF_NONE)
        need(&c, "ts_exc_state + err_exc_value", l->ts_exc_state + l->err_exc_value, 2 * PTR, ts);
    if (l->ts_cframe == FPI_OFF_NONE && l->ts_current_frame == FPI_OFF_NONE)
        need(&c, "top frame pointer (none)", -2, 0, 0);

    /* Frame: frame_bytes hands out fr_size bytes (≤ FPI_MAX_STRUCT_READ), of
     * which only the header before localsplus must lie in the data stack's
     * live part: every field the walk reads lies in it. */
    int64_t fr = l->fr_size > 0 && l->fr_size <= FPI_MAX_STRUCT_READ ? l->fr_size : 0;
    need(&c, "fr_localsplus", l->fr_localsplus, PTR, fr);
    int64_t hdr = l->fr_localsplus > 0 && l->fr_localsplus + PTR <= fr ? l->fr_localsplus : 0;
    need(&c, "fr_executable", l->fr_executable, PTR, hdr);
    need(&c, "fr_previous", l->fr_previous, PTR, hdr);
    need(&c, "fr_instr_ptr", l->fr_instr_ptr, PTR, hdr);
    need(&c, "fr_owner", l->fr_owner, U8, hdr);
    need(&c, "fr_is_entry", l->fr_is_entry, U8, hdr);
    need(&c, "fr_tlbc_index", l->fr_tlbc_index, U32, hdr);
    need(&c, "fr_stacktop", l->fr_stacktop, U32, hdr);
    need(&c, "fr_funcobj", l->fr_funcobj, PTR, hdr);
    need(&c, "fr_stackpointer", l->fr_stackpointer, PTR, hdr);
    need(&c, "fr_frame_obj", l->fr_frame_obj, PTR, hdr);
    /* Frame object: stack_switch.c reads [0, fo_frame_data + 8) at once. */
    int64_t fo = l->fo_frame_data >= 0 && l->fo_frame_data + PTR <= FPI_MAX_FRAME_OBJECT_PREFIX ? l->fo_frame_data + PTR : 0;
    need(&c, "fo_frame", l->fo_frame, PTR, fo);
    need(&c, "fo_frame_data", l->fo_frame_data, PTR, fo);

    /* Code object: the cache copies [0, co_code_adaptive) (≤ 4096 and
     * within co_size) and reads every identity field from that copy. */
    int64_t co = l->co_code_adaptive > 0 && l->co_code_adaptive <= FPI_MAX_STRUCT_READ &&
                         (l->co_size == FPI_OFF_NONE || l->co_code_adaptive <= l->co_size)
                     ? l->co_code_adaptive
                     : 0;
    need(&c, "co_code_adaptive", 0, 1, co);
    need(&c, "ob_type (code)", l->ob_type, PTR, co);
    need(&c, "ob_size (code)", l->ob_size, PTR, co);
    need(&c, "co_flags", l->co_flags, U32, co);
    need(&c, "co_firstlineno", l->co_firstlineno, U32, co);
    need(&c, "co_firsttraceable", l->co_firsttraceable, U32, co);
    need(&c, "co_filename", l->co_filename, PTR, co);
    need(&c, "co_name", l->co_name, PTR, co);
    need(&c, "co_qualname", l->co_qualname, PTR, co);
    need(&c, "co_linetable", l->co_linetable, PTR, co);
    need(&c, "co_nlocalsplus", l->co_nlocalsplus, U32, co);
    if (l->co_tlbc != FPI_OFF_NONE)
        need(&c, "co_tlbc", l->co_tlbc, PTR, l->co_size);

    /* str: the reader copies uni_ascii_size bytes, then (not compact)
     * uni_compact_size + 8 into a FPI_STR_HEADER_MAX buffer. */
    int64_t ascii = l->uni_ascii_size > 0 && l->uni_ascii_size <= FPI_STR_HEADER_MAX ? l->uni_ascii_size : 0;
    need(&c, "ob_type (str)", l->ob_type, PTR, ascii);
    need(&c, "uni_length", l->uni_length, PTR, ascii);
    need(&c, "uni_state", l->uni_state, U32, ascii);
    need(&c, "uni_compact_size", l->uni_compact_size, PTR,
         l->uni_compact_size >= l->uni_ascii_size ? FPI_STR_HEADER_MAX : 0);
    if (l->uni_kind_shift > 29 || l->uni_compact_bit > 31 || l->uni_ascii_bit > 31)
        need(&c, "unicode state bits", -2, 0, 0);

    /* bytes: the reader copies bytes_sval bytes of header. */
    int64_t sval = l->bytes_sval > 0 && l->bytes_sval <= FPI_STR_HEADER_MAX ? l->bytes_sval : 0;
    need(&c, "ob_type (bytes)", l->ob_type, PTR, sval);
    need(&c, "ob_size (bytes)", l->ob_size, PTR, sval);

    /* Type objects: tp_name is read on its own (any offset is bounded). */
    need(&c, "tp_name", l->tp_name, PTR, FPI_MAX_STRUCT_READ);

    /* Data-stack chunks: copied with their header. */
    need(&c, "chunk_previous", l->chunk_previous, PTR, FPI_CHUNK_HEADER);
    need(&c, "chunk_size", l->chunk_size, PTR, FPI_CHUNK_HEADER);
    need(&c, "chunk_top", l->chunk_top, PTR, FPI_CHUNK_HEADER);

    return c.failed ? FP_E_CORRUPT : FP_OK;
}
