/* fuzz_debug_offsets.c — fpi_debug_offsets_parse on any blob of up to 8 KiB
 * (zero-padded to the FPI_DEBUG_OFFSETS_READ bytes the library reads).
 *
 * Oracle: when the parser accepts a table, every offset the resulting
 * fpi_layout hands the walker must lie inside the structure size the blob
 * itself declares for that structure, and inside the buffer the walker
 * copies that structure into:
 *   - thread-state fields inside thread_state.size and FPI_MAX_STRUCT_READ
 *     (the walker copies ts_read_len = highest field + 8 bytes into an
 *     FPI_MAX_STRUCT_READ buffer);
 *   - frame fields inside interpreter_frame.size (<= FPI_MAX_STRUCT_READ);
 *   - code-object fields the code cache reads from its header copy inside
 *     co_code_adaptive bytes, which must lie inside code_object.size;
 *   - interpreter, runtime, type, bytes and unicode fields inside their
 *     structure sizes, and the unicode header fields inside the ASCII
 *     header the str reader copies first.
 * The structure sizes are read from the blob at the positions of CPython's
 * _Py_DebugOffsets for 3.13, 3.14 and 3.15 (written out below, not taken
 * from the library).
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz_common.h"
#include "debug_offsets.h"
#include "frameproof/frameproof.h"
#include "layout.h"

#define POINTER 8
#define U32 4
#define U8 1

/* Positions of the *.size fields in _Py_DebugOffsets. */
typedef struct size_pos {
    unsigned minor;
    uint16_t runtime, interp, tstate, frame, code, object, type, bytes, unicode;
} size_pos;

static const size_pos SIZE_POS[] = {
    {13, 24, 48, 152, 224, 272, 352, 368, 512, 536},
    {14, 24, 48, 176, 248, 312, 400, 416, 592, 616},
    {15, 24, 48, 176, 312, 376, 464, 480, 688, 712},
};

typedef struct sizes {
    uint64_t runtime, interp, tstate, frame, code, object, type, bytes, unicode;
} sizes;

/* Field [off, off + width) must lie inside [0, limit) unless absent. */
static void in_bounds(const char *what, int32_t off, unsigned width, uint64_t limit)
{
    if (off == FPI_OFF_NONE)
        return;
    FUZZ_CHECK(off >= 0 && (uint64_t)off + width <= limit, "%s = %d (+%u) is outside its structure of %llu bytes", what,
               off, width, (unsigned long long)limit);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static void check_layout(const fpi_layout *l, const sizes *z)
{
    /* _PyRuntimeState */
    in_bounds("rt_interpreters_head", l->rt_interpreters_head, POINTER, z->runtime);

    /* PyInterpreterState */
    FUZZ_CHECK(l->interp_size >= 0 && (uint64_t)l->interp_size == z->interp, "interp_size %d vs table %llu",
               l->interp_size, (unsigned long long)z->interp);
    in_bounds("interp_next", l->interp_next, POINTER, z->interp);
    in_bounds("interp_id", l->interp_id, POINTER, z->interp);
    in_bounds("interp_threads_head", l->interp_threads_head, POINTER, z->interp);
    in_bounds("interp_threads_main", l->interp_threads_main, POINTER, z->interp);
    in_bounds("interp_ceval_gil", l->interp_ceval_gil, POINTER, z->interp);
    in_bounds("interp_code_generation", l->interp_code_generation, POINTER, z->interp);
    in_bounds("interp_tlbc_generation", l->interp_tlbc_generation, U32, z->interp);

    /* PyThreadState: copied into an FPI_MAX_STRUCT_READ buffer. */
    uint64_t ts = min_u64(z->tstate, FPI_MAX_STRUCT_READ);
    in_bounds("ts_next", l->ts_next, POINTER, ts);
    in_bounds("ts_interp", l->ts_interp, POINTER, ts);
    in_bounds("ts_current_frame", l->ts_current_frame, POINTER, ts);
    in_bounds("ts_base_frame", l->ts_base_frame, POINTER, ts);
    in_bounds("ts_thread_id", l->ts_thread_id, POINTER, ts);
    in_bounds("ts_native_thread_id", l->ts_native_thread_id, POINTER, ts);
    in_bounds("ts_datastack_chunk", l->ts_datastack_chunk, POINTER, ts);
    in_bounds("ts_datastack_top", l->ts_datastack_top, POINTER, ts);
    in_bounds("ts_status", l->ts_status, U32, ts);
    in_bounds("ts_holds_gil", l->ts_holds_gil, U32, ts);
    in_bounds("ts_gil_requested", l->ts_gil_requested, U32, ts);
    in_bounds("ts_current_exception", l->ts_current_exception, POINTER, ts);
    in_bounds("ts_exc_info", l->ts_exc_info, POINTER, ts);

    /* _PyInterpreterFrame: copied whole (fr_size bytes). */
    FUZZ_CHECK(l->fr_size > 0 && (uint64_t)l->fr_size == z->frame && l->fr_size <= FPI_MAX_STRUCT_READ,
               "fr_size %d vs table %llu (buffer %d)", l->fr_size, (unsigned long long)z->frame, FPI_MAX_STRUCT_READ);
    in_bounds("fr_executable", l->fr_executable, POINTER, z->frame);
    in_bounds("fr_previous", l->fr_previous, POINTER, z->frame);
    in_bounds("fr_instr_ptr", l->fr_instr_ptr, POINTER, z->frame);
    in_bounds("fr_owner", l->fr_owner, U8, z->frame);
    in_bounds("fr_tlbc_index", l->fr_tlbc_index, U32, z->frame);

    /* PyCodeObject: the cache copies co_code_adaptive bytes and reads
     * these fields from that copy. */
    in_bounds("co_code_adaptive", l->co_code_adaptive, 0, z->code);
    uint64_t hdr = l->co_code_adaptive >= 0 ? (uint64_t)l->co_code_adaptive : 0;
    in_bounds("ob_type (code header)", l->ob_type, POINTER, hdr);
    in_bounds("ob_size (code header)", l->ob_size, POINTER, hdr);
    in_bounds("co_flags", l->co_flags, U32, hdr);
    in_bounds("co_firstlineno", l->co_firstlineno, U32, hdr);
    in_bounds("co_firsttraceable", l->co_firsttraceable, U32, hdr);
    in_bounds("co_filename", l->co_filename, POINTER, hdr);
    in_bounds("co_name", l->co_name, POINTER, hdr);
    in_bounds("co_qualname", l->co_qualname, POINTER, hdr);
    in_bounds("co_linetable", l->co_linetable, POINTER, hdr);
    in_bounds("co_tlbc", l->co_tlbc, POINTER, z->code);

    /* Objects. */
    in_bounds("ob_type", l->ob_type, POINTER, z->object);
    in_bounds("tp_name", l->tp_name, POINTER, z->type);
    in_bounds("ob_size (bytes)", l->ob_size, POINTER, z->bytes);
    in_bounds("bytes_sval", l->bytes_sval, 0, z->bytes);
    /* str: the reader copies uni_ascii_size bytes, then (non-compact)
     * uni_compact_size + 8 for the data pointer. */
    in_bounds("uni_ascii_size", l->uni_ascii_size, 0, z->unicode);
    /* The ASCII header is a prefix of the compact one. */
    in_bounds("uni_ascii_size (within the compact header)", l->uni_ascii_size, 0,
              l->uni_compact_size >= 0 ? (uint64_t)l->uni_compact_size : 0);
    in_bounds("uni_compact_size (+ data pointer)", l->uni_compact_size, POINTER, z->unicode);
    uint64_t ascii = l->uni_ascii_size >= 0 ? (uint64_t)l->uni_ascii_size : 0;
    in_bounds("ob_type (str header)", l->ob_type, POINTER, ascii);
    in_bounds("uni_length", l->uni_length, POINTER, ascii);
    in_bounds("uni_state", l->uni_state, U32, ascii);
    FUZZ_CHECK(l->uni_kind_shift <= 29 && l->uni_compact_bit <= 31 && l->uni_ascii_bit <= 31, "state bits %u/%u/%u",
               l->uni_kind_shift, l->uni_compact_bit, l->uni_ascii_bit);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t table[FPI_DEBUG_OFFSETS_READ];
    memset(table, 0, sizeof table);
    memcpy(table, data, size < sizeof table ? size : sizeof table);
    fpi_layout l;
    fpi_errbuf eb;
    eb.msg[0] = 0;
    int rc = fpi_debug_offsets_parse(table, sizeof table, &l, &eb);
    FUZZ_CHECK(rc == FP_OK || rc == FP_E_NOT_PYTHON || rc == FP_E_UNSUPPORTED || rc == FP_E_CORRUPT,
               "unexpected code %d", rc);
    FUZZ_CHECK(memchr(eb.msg, 0, sizeof eb.msg) != NULL, "unterminated message");
    FUZZ_CHECK_MESSAGE(rc, eb.msg);
    /* Truncated copies must be rejected, never over-read: parse every
     * length up to the input's own (ASan watches the reads). */
    if (size < FPI_DEBUG_OFFSETS_SIZE_315 + 1) {
        fpi_layout t;
        int trc = fpi_debug_offsets_parse(data, size, &t, NULL);
        (void)trc;
    }
    uint32_t hex;
    int ft;
    FUZZ_CHECK(fpi_debug_offsets_peek(table, sizeof table, &hex, &ft) == (memcmp(table, FPI_DEBUG_COOKIE, FPI_DEBUG_COOKIE_LEN) == 0 && fpi_le_get_u64(table + 8) <= UINT32_MAX),
               "peek disagrees with the cookie");
    if (rc != FP_OK)
        return 0;
    unsigned minor = (hex >> 16) & 0xff;
    const size_pos *sp = NULL;
    for (size_t i = 0; i < sizeof SIZE_POS / sizeof SIZE_POS[0]; i++)
        if (SIZE_POS[i].minor == minor)
            sp = &SIZE_POS[i];
    FUZZ_CHECK(sp != NULL, "accepted a table of version 0x%08x", hex);
    FUZZ_CHECK(l.minor == minor && l.hexversion == hex, "layout version %u/0x%08x vs table 0x%08x", l.minor,
               l.hexversion, hex);
    sizes z = {
        fpi_le_get_u64(table + sp->runtime), fpi_le_get_u64(table + sp->interp), fpi_le_get_u64(table + sp->tstate),
        fpi_le_get_u64(table + sp->frame),   fpi_le_get_u64(table + sp->code),   fpi_le_get_u64(table + sp->object),
        fpi_le_get_u64(table + sp->type),    fpi_le_get_u64(table + sp->bytes),  fpi_le_get_u64(table + sp->unicode),
    };
    check_layout(&l, &z);
    return 0;
}
