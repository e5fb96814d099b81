/* debug_offsets.c — the per-version shape of _Py_DebugOffsets (3.13, 3.14,
 * 3.15) and its validation: every size and offset the walker will use is
 * checked against its group's size and a hard bound before use. */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "frameproof/frameproof.h"
#include "debug_offsets.h"
#include "fp_facts.h"
#include "fpi_limits.h"
#include "versions.h"

enum fkind {
    F_SIZE,   /* a group's size: bounded by the group's max */
    F_OFF,    /* an offset in the group: off + width <= group size */
    F_ABS,    /* stored as is (no bound; e.g. a nested offset checked later) */
};

typedef struct field_desc {
    uint16_t pos;        /* byte position of the uint64 in the table */
    int8_t group;        /* index into the group table below */
    uint8_t kind;
    uint8_t width;       /* bytes read at the offset by the walker */
    int16_t member;      /* offsetof(fpi_layout, ...) or -1 to skip */
} field_desc;

enum grp { G_RT, G_INTERP, G_TS, G_FRAME, G_CODE, G_OBJ, G_TYPE, G_BYTES, G_UNI, G_GEN, G_SET, G_LONG, G_COUNT };

static const uint32_t group_max[G_COUNT] = {
    FPI_MAX_RUNTIME_SIZE, FPI_MAX_INTERP_SIZE, FPI_MAX_TSTATE_SIZE, FPI_MAX_SMALL_STRUCT, FPI_MAX_SMALL_STRUCT,
    FPI_MAX_SMALL_STRUCT, FPI_MAX_SMALL_STRUCT, FPI_MAX_SMALL_STRUCT, FPI_MAX_SMALL_STRUCT, FPI_MAX_SMALL_STRUCT,
    FPI_MAX_SMALL_STRUCT, FPI_MAX_SMALL_STRUCT,
};

static const char *const group_name[G_COUNT] = {
    "runtime_state", "interpreter_state", "thread_state", "interpreter_frame", "code_object",
    "pyobject", "type_object", "bytes_object", "unicode_object", "gen_object", "set_object", "long_object",
};

#define M(f) ((int16_t)offsetof(fpi_layout, f))
#define SZ(p, g, m) {p, g, F_SIZE, 8, m}
#define OF(p, g, w, m) {p, g, F_OFF, w, m}
#define AB(p, g, m) {p, g, F_ABS, 8, m}

/* Pseudo-members for values that need post-processing. */
enum { X_GIL_BASE = -2, X_GIL_LOCKED = -3, X_GIL_HOLDER = -4, X_EXC_STATE = -5, X_ERR_EXC_VALUE = -6 };

static const field_desc fields_313[] = {
    SZ(24, G_RT, -1), OF(40, G_RT, 8, M(rt_interpreters_head)),
    SZ(48, G_INTERP, M(interp_size)), OF(56, G_INTERP, 8, M(interp_id)), OF(64, G_INTERP, 8, M(interp_next)),
    OF(72, G_INTERP, 8, M(interp_threads_head)), OF(88, G_INTERP, 8, M(interp_modules)),
    OF(112, G_INTERP, 8, M(interp_ceval_gil)),
    OF(120, G_INTERP, 8, X_GIL_BASE), OF(136, G_INTERP, 4, X_GIL_LOCKED), OF(144, G_INTERP, 8, X_GIL_HOLDER),
    SZ(152, G_TS, M(ts_size)), OF(168, G_TS, 8, M(ts_next)), OF(176, G_TS, 8, M(ts_interp)),
    OF(184, G_TS, 8, M(ts_current_frame)), OF(192, G_TS, 8, M(ts_thread_id)),
    OF(200, G_TS, 8, M(ts_native_thread_id)), OF(208, G_TS, 8, M(ts_datastack_chunk)), OF(216, G_TS, 4, M(ts_status)),
    SZ(224, G_FRAME, M(fr_size)), OF(232, G_FRAME, 8, M(fr_previous)), OF(240, G_FRAME, 8, M(fr_executable)),
    OF(248, G_FRAME, 8, M(fr_instr_ptr)), OF(264, G_FRAME, 1, M(fr_owner)),
    SZ(272, G_CODE, M(co_size)), OF(280, G_CODE, 8, M(co_filename)), OF(288, G_CODE, 8, M(co_name)),
    OF(296, G_CODE, 8, M(co_qualname)), OF(304, G_CODE, 8, M(co_linetable)), OF(312, G_CODE, 4, M(co_firstlineno)),
    AB(344, G_CODE, M(co_code_adaptive)),
    SZ(352, G_OBJ, -1), OF(360, G_OBJ, 8, M(ob_type)),
    SZ(368, G_TYPE, -1), OF(376, G_TYPE, 8, M(tp_name)),
    SZ(512, G_BYTES, -1), OF(520, G_BYTES, 8, M(ob_size)), AB(528, G_BYTES, M(bytes_sval)),
    SZ(536, G_UNI, -1), OF(544, G_UNI, 4, M(uni_state)), OF(552, G_UNI, 8, M(uni_length)),
    AB(560, G_UNI, M(uni_ascii_size)),
};

static const field_desc fields_314[] = {
    SZ(24, G_RT, -1), OF(40, G_RT, 8, M(rt_interpreters_head)),
    SZ(48, G_INTERP, M(interp_size)), OF(56, G_INTERP, 8, M(interp_id)), OF(64, G_INTERP, 8, M(interp_next)),
    OF(72, G_INTERP, 8, M(interp_threads_head)), OF(80, G_INTERP, 8, M(interp_threads_main)),
    OF(96, G_INTERP, 8, M(interp_modules)), OF(120, G_INTERP, 8, M(interp_ceval_gil)),
    OF(128, G_INTERP, 8, X_GIL_BASE), OF(144, G_INTERP, 4, X_GIL_LOCKED), OF(152, G_INTERP, 8, X_GIL_HOLDER),
    OF(160, G_INTERP, 8, M(interp_code_generation)), AB(168, G_INTERP, M(interp_tlbc_generation)),
    SZ(176, G_TS, M(ts_size)), OF(192, G_TS, 8, M(ts_next)), OF(200, G_TS, 8, M(ts_interp)),
    OF(208, G_TS, 8, M(ts_current_frame)), OF(216, G_TS, 8, M(ts_thread_id)),
    OF(224, G_TS, 8, M(ts_native_thread_id)), OF(232, G_TS, 8, M(ts_datastack_chunk)), OF(240, G_TS, 4, M(ts_status)),
    SZ(248, G_FRAME, M(fr_size)), OF(256, G_FRAME, 8, M(fr_previous)), OF(264, G_FRAME, 8, M(fr_executable)),
    OF(272, G_FRAME, 8, M(fr_instr_ptr)), OF(280, G_FRAME, 8, M(fr_localsplus)), OF(288, G_FRAME, 1, M(fr_owner)),
    OF(296, G_FRAME, 8, M(fr_stackpointer)), AB(304, G_FRAME, M(fr_tlbc_index)),
    SZ(312, G_CODE, M(co_size)), OF(320, G_CODE, 8, M(co_filename)), OF(328, G_CODE, 8, M(co_name)),
    OF(336, G_CODE, 8, M(co_qualname)), OF(344, G_CODE, 8, M(co_linetable)), OF(352, G_CODE, 4, M(co_firstlineno)),
    AB(384, G_CODE, M(co_code_adaptive)), AB(392, G_CODE, M(co_tlbc)),
    SZ(400, G_OBJ, -1), OF(408, G_OBJ, 8, M(ob_type)),
    SZ(416, G_TYPE, -1), OF(424, G_TYPE, 8, M(tp_name)), OF(440, G_TYPE, 8, M(tp_flags)),
    SZ(496, G_SET, -1), OF(504, G_SET, 8, M(set_used)), OF(512, G_SET, 8, M(set_table)), OF(520, G_SET, 8, M(set_mask)),
    SZ(568, G_LONG, -1), OF(576, G_LONG, 8, M(long_lv_tag)), AB(584, G_LONG, M(long_digits)),
    SZ(592, G_BYTES, -1), OF(600, G_BYTES, 8, M(ob_size)), AB(608, G_BYTES, M(bytes_sval)),
    SZ(616, G_UNI, -1), OF(624, G_UNI, 4, M(uni_state)), OF(632, G_UNI, 8, M(uni_length)),
    AB(640, G_UNI, M(uni_ascii_size)),
    SZ(664, G_GEN, -1), AB(680, G_GEN, M(gen_iframe)), OF(688, G_GEN, 1, M(gen_frame_state)),
};

static const field_desc fields_315[] = {
    SZ(24, G_RT, -1), OF(40, G_RT, 8, M(rt_interpreters_head)),
    SZ(48, G_INTERP, M(interp_size)), OF(56, G_INTERP, 8, M(interp_id)), OF(64, G_INTERP, 8, M(interp_next)),
    OF(72, G_INTERP, 8, M(interp_threads_head)), OF(80, G_INTERP, 8, M(interp_threads_main)),
    OF(96, G_INTERP, 8, M(interp_modules)), OF(120, G_INTERP, 8, M(interp_ceval_gil)),
    OF(128, G_INTERP, 8, X_GIL_BASE), OF(144, G_INTERP, 4, X_GIL_LOCKED), OF(152, G_INTERP, 8, X_GIL_HOLDER),
    OF(160, G_INTERP, 8, M(interp_code_generation)), AB(168, G_INTERP, M(interp_tlbc_generation)),
    SZ(176, G_TS, M(ts_size)), OF(192, G_TS, 8, M(ts_next)), OF(200, G_TS, 8, M(ts_interp)),
    OF(208, G_TS, 8, M(ts_current_frame)), OF(216, G_TS, 8, M(ts_base_frame)),
    OF(240, G_TS, 8, M(ts_thread_id)), OF(248, G_TS, 8, M(ts_native_thread_id)),
    OF(256, G_TS, 8, M(ts_datastack_chunk)), OF(264, G_TS, 4, M(ts_status)),
    OF(272, G_TS, 4, M(ts_holds_gil)), OF(280, G_TS, 4, M(ts_gil_requested)),
    OF(288, G_TS, 8, M(ts_current_exception)), OF(296, G_TS, 8, X_EXC_STATE),
    AB(304, G_TS, X_ERR_EXC_VALUE),
    SZ(312, G_FRAME, M(fr_size)), OF(320, G_FRAME, 8, M(fr_previous)), OF(328, G_FRAME, 8, M(fr_executable)),
    OF(336, G_FRAME, 8, M(fr_instr_ptr)), OF(344, G_FRAME, 8, M(fr_localsplus)), OF(352, G_FRAME, 1, M(fr_owner)),
    OF(360, G_FRAME, 8, M(fr_stackpointer)), AB(368, G_FRAME, M(fr_tlbc_index)),
    SZ(376, G_CODE, M(co_size)), OF(384, G_CODE, 8, M(co_filename)), OF(392, G_CODE, 8, M(co_name)),
    OF(400, G_CODE, 8, M(co_qualname)), OF(408, G_CODE, 8, M(co_linetable)), OF(416, G_CODE, 4, M(co_firstlineno)),
    AB(448, G_CODE, M(co_code_adaptive)), AB(456, G_CODE, M(co_tlbc)),
    SZ(464, G_OBJ, -1), OF(472, G_OBJ, 8, M(ob_type)),
    SZ(480, G_TYPE, -1), OF(488, G_TYPE, 8, M(tp_name)), OF(504, G_TYPE, 8, M(tp_flags)),
    SZ(592, G_SET, -1), OF(600, G_SET, 8, M(set_used)), OF(608, G_SET, 8, M(set_table)), OF(616, G_SET, 8, M(set_mask)),
    SZ(664, G_LONG, -1), OF(672, G_LONG, 8, M(long_lv_tag)), AB(680, G_LONG, M(long_digits)),
    SZ(688, G_BYTES, -1), OF(696, G_BYTES, 8, M(ob_size)), AB(704, G_BYTES, M(bytes_sval)),
    SZ(712, G_UNI, -1), OF(720, G_UNI, 4, M(uni_state)), OF(728, G_UNI, 8, M(uni_length)),
    AB(736, G_UNI, M(uni_ascii_size)), AB(744, G_UNI, M(uni_compact_size)),
    SZ(792, G_GEN, -1), AB(808, G_GEN, M(gen_iframe)), OF(816, G_GEN, 1, M(gen_frame_state)),
};

static uint64_t load_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

int fpi_debug_offsets_peek(const uint8_t *table, size_t len, uint32_t *hexversion, int *free_threaded)
{
    if (len < 24 || memcmp(table, FPI_DEBUG_COOKIE, FPI_DEBUG_COOKIE_LEN) != 0)
        return 0;
    uint64_t v = load_u64(table + 8);
    uint64_t ft = load_u64(table + 16);
    if (v > UINT32_MAX)
        return 0;
    *hexversion = (uint32_t)v;
    *free_threaded = ft != 0;
    return 1;
}

static void set_member(fpi_layout *l, int16_t member, int32_t v)
{
    memcpy((char *)l + member, &v, sizeof v);
}

int fpi_debug_offsets_parse(const uint8_t *table, size_t len, fpi_layout *out, fpi_errbuf *eb)
{
    return fpi_debug_offsets_parse_opt(table, len, false, out, eb);
}

int fpi_debug_offsets_parse_opt(const uint8_t *table, size_t len, bool allow_untested, fpi_layout *out,
                                fpi_errbuf *eb)
{
    uint32_t hex;
    int ft;
    if (!fpi_debug_offsets_peek(table, len, &hex, &ft))
        return fpi_err(eb, FP_E_NOT_PYTHON, "runtime address: no _Py_DebugOffsets cookie \"%s\"", FPI_DEBUG_COOKIE);
    unsigned major = fpi_hex_major(hex), minor = fpi_hex_minor(hex);
    const field_desc *fields;
    size_t nfields, need;
    if (fpi_minor_untested(major, minor)) {
        if (!allow_untested)
            return fpi_err_unsupported(eb, major, minor);
        minor = FPI_MINOR_NEWEST; /* read the table in the newest known shape */
    } else if (major != FPI_PY_MAJOR || minor < FPI_MINOR_DEBUG_OFFSETS) {
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: impossible version 0x%08x", hex);
    }
    if (ft != 0 && ft != 1)
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: free_threaded flag is %d", ft);
    switch (minor) {
    case 13: fields = fields_313; nfields = sizeof fields_313 / sizeof *fields; need = FPI_DEBUG_OFFSETS_SIZE_313; break;
    case 14: fields = fields_314; nfields = sizeof fields_314 / sizeof *fields; need = FPI_DEBUG_OFFSETS_SIZE_314; break;
    default: fields = fields_315; nfields = sizeof fields_315 / sizeof *fields; need = FPI_DEBUG_OFFSETS_SIZE_315; break;
    }
    if (len < need)
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: table truncated to %zu of %zu bytes", len, need);

    memset(out, 0, sizeof *out);
    /* Every int32 member starts as "absent". */
    for (size_t off = offsetof(fpi_layout, rt_interpreters_head); off + 4 <= offsetof(fpi_layout, uni_kind_shift); off += 4)
        set_member(out, (int16_t)off, FPI_OFF_NONE);
    out->hexversion = hex;
    out->minor = minor;
    out->free_threaded = ft;
    out->from_debug_offsets = true;

    uint64_t gsize[G_COUNT] = {0};
    int64_t gil_base = -1, gil_locked = -1, gil_holder = -1, exc_state = -1, err_exc = -1;
    for (size_t i = 0; i < nfields; i++) {
        const field_desc *f = &fields[i];
        uint64_t v = load_u64(table + f->pos);
        if (f->kind == F_SIZE) {
            if (v == 0 || v > group_max[f->group])
                return fpi_err(eb, FP_E_CORRUPT, "debug offsets: %s.size = %llu is out of bounds (1..%u)",
                              group_name[f->group], (unsigned long long)v, group_max[f->group]);
            gsize[f->group] = v;
        } else if (f->kind == F_OFF) {
            if (v > gsize[f->group] || gsize[f->group] - v < f->width)
                return fpi_err(eb, FP_E_CORRUPT,
                              "debug offsets: field at table byte %u (%s) = %llu does not fit in size %llu",
                              f->pos, group_name[f->group], (unsigned long long)v,
                              (unsigned long long)gsize[f->group]);
        } else {
            if (v > group_max[f->group])
                return fpi_err(eb, FP_E_CORRUPT, "debug offsets: value at table byte %u = %llu is out of bounds",
                              f->pos, (unsigned long long)v);
        }
        switch (f->member) {
        case -1: break;
        case X_GIL_BASE: gil_base = (int64_t)v; break;
        case X_GIL_LOCKED: gil_locked = (int64_t)v; break;
        case X_GIL_HOLDER: gil_holder = (int64_t)v; break;
        case X_EXC_STATE: exc_state = (int64_t)v; break;
        case X_ERR_EXC_VALUE: err_exc = (int64_t)v; break;
        default: set_member(out, f->member, (int32_t)v); break;
        }
    }
    /* The GIL fields are stored relative to the interpreter; the walker
     * reads them through interp->ceval.gil, so make them relative. */
    if (gil_locked < gil_base || gil_holder < gil_base || gil_locked - gil_base > 64 || gil_holder - gil_base > 64)
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: GIL fields are not inside the GIL structure");
    out->gil_locked = (int32_t)(gil_locked - gil_base);
    out->gil_last_holder = (int32_t)(gil_holder - gil_base);
    if (exc_state >= 0) {
        if (err_exc < 0 || err_exc > 64 || (uint64_t)(exc_state + err_exc + 8) > gsize[G_TS])
            return fpi_err(eb, FP_E_CORRUPT, "debug offsets: exc_state.exc_value lies outside the thread state");
        out->err_exc_value = (int32_t)err_exc;
        out->ts_exc_state = (int32_t)exc_state;
    }
    /* Positions read relative to objects must leave room for the data. */
    if (out->co_code_adaptive < out->co_qualname || (uint64_t)out->co_code_adaptive > gsize[G_CODE])
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: co_code_adaptive (%d) is outside the code object", out->co_code_adaptive);
    if (out->uni_ascii_size < out->uni_state + 4 || (uint64_t)out->uni_ascii_size > gsize[G_UNI])
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: asciiobject_size (%d) is invalid", out->uni_ascii_size);
    /* The str reader may read the data pointer of a non-compact str right
     * after the compact header: it must lie inside the unicode object. */
    int64_t compact = out->uni_compact_size != FPI_OFF_NONE ? out->uni_compact_size : out->uni_ascii_size + 16;
    if ((uint64_t)compact + 8 > gsize[G_UNI] || compact < out->uni_ascii_size)
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: unicode_object.size (%llu) cannot hold its compact header (%lld)",
                      (unsigned long long)gsize[G_UNI], (long long)compact);
    if ((uint64_t)out->bytes_sval >= gsize[G_BYTES])
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: ob_sval (%d) is outside bytes_object.size", out->bytes_sval);
    if (out->bytes_sval < out->ob_size + 8 || out->bytes_sval > 256)
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: ob_sval (%d) is invalid", out->bytes_sval);
    /* asyncio's graph (3.14+): a coroutine's frame lies past its state
     * byte inside the object, aligned; a long's digits past its tag. */
    if (out->gen_iframe != FPI_OFF_NONE &&
        (out->gen_iframe <= out->gen_frame_state || (uint64_t)out->gen_iframe >= gsize[G_GEN] || out->gen_iframe % 8))
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: gi_iframe (%d) is invalid", out->gen_iframe);
    if (out->long_digits != FPI_OFF_NONE &&
        (out->long_digits < out->long_lv_tag + 8 || (uint64_t)out->long_digits + 4 > gsize[G_LONG]))
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: ob_digit (%d) is invalid", out->long_digits);
    if (out->fr_tlbc_index != FPI_OFF_NONE && out->fr_tlbc_index != 0 &&
        (uint64_t)out->fr_tlbc_index + 4 > gsize[G_FRAME])
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: tlbc_index (%d) is outside the frame", out->fr_tlbc_index);
    if (out->fr_tlbc_index == 0)
        out->fr_tlbc_index = FPI_OFF_NONE;   /* GIL builds store 0 */
    if (out->co_tlbc == 0)
        out->co_tlbc = FPI_OFF_NONE;
    if (out->interp_tlbc_generation == 0)
        out->interp_tlbc_generation = FPI_OFF_NONE;
    if (out->co_tlbc != FPI_OFF_NONE && (uint64_t)out->co_tlbc + 8 > gsize[G_CODE])
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: co_tlbc (%d) is outside the code object", out->co_tlbc);
    if (out->interp_tlbc_generation != FPI_OFF_NONE && (uint64_t)out->interp_tlbc_generation + 4 > gsize[G_INTERP])
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: tlbc_generation is outside the interpreter state");
    if (ft != (out->fr_tlbc_index != FPI_OFF_NONE) && minor >= 14)
        return fpi_err(eb, FP_E_CORRUPT, "debug offsets: free_threaded=%d disagrees with tlbc_index", ft);
    return fpi_layout_add_builtin_extras(out, eb ? eb->msg : NULL, eb ? sizeof eb->msg : 0);
}
