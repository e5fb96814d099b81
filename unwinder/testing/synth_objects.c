/* synth_objects.c — the objects of a synthetic image (see synth_image.h):
 * C strings, type objects, str objects (compact ASCII, compact and not
 * compact non-ASCII), line tables and code objects, laid out with the
 * layout's real offsets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth_image.h"

static uint64_t cstring(synth_image *im, const char *s)
{
    size_t n = strlen(s) + 1;
    uint64_t a = synth_alloc(im, n);
    if (a)
        memcpy(synth_bytes(im, a, n), s, n);
    return a;
}

uint64_t synth_type_object(synth_image *im, const char *name)
{
    uint64_t t = synth_alloc(im, TYPE_OBJECT_BYTES);
    uint64_t n = cstring(im, name);
    if (!t || !n)
        return 0;
    synth_put64(im, t + (uint64_t)im->l.tp_name, n);
    return t;
}

/* Decodes UTF-8 into code points; returns the count or -1. */
static long utf8_decode(const char *s, uint32_t *out, size_t max)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0;
    while (*p) {
        uint32_t cp;
        int extra;
        if (*p < 0x80) { cp = *p; extra = 0; }
        else if ((*p & 0xE0) == 0xC0) { cp = *p & 0x1F; extra = 1; }
        else if ((*p & 0xF0) == 0xE0) { cp = *p & 0x0F; extra = 2; }
        else if ((*p & 0xF8) == 0xF0) { cp = *p & 0x07; extra = 3; }
        else return -1;
        p++;
        for (int i = 0; i < extra; i++, p++) {
            if ((*p & 0xC0) != 0x80)
                return -1;
            cp = cp << 6 | (*p & 0x3F);
        }
        if (n == max)
            return -1;
        out[n++] = cp;
    }
    return (long)n;
}

uint64_t synth_str_object(synth_image *im, const char *utf8, bool noncompact)
{
    const fpi_layout *l = &im->l;
    size_t cap = strlen(utf8) + 1;
    uint32_t *cps = malloc(cap * sizeof *cps);
    if (!cps)
        return 0;
    long n = utf8_decode(utf8, cps, cap);
    if (n < 0) {
        free(cps);
        return 0;
    }
    uint32_t maxcp = 0;
    for (long i = 0; i < n; i++)
        if (cps[i] > maxcp)
            maxcp = cps[i];
    unsigned kind = maxcp < 0x100 ? 1 : maxcp < 0x10000 ? 2 : 4;
    bool ascii = maxcp < 0x80;
    size_t header = noncompact ? (size_t)l->uni_compact_size + 8 : (size_t)(ascii ? l->uni_ascii_size : l->uni_compact_size);
    size_t data_len = (size_t)(n + 1) * kind;
    uint64_t obj = synth_alloc(im, noncompact ? header : header + data_len);
    uint64_t data = noncompact ? synth_alloc(im, data_len) : obj + header;
    if (!obj || !data) {
        free(cps);
        return 0;
    }
    synth_put64(im, obj + (uint64_t)l->ob_type, im->type_str);
    synth_put64(im, obj + (uint64_t)l->uni_length, (uint64_t)n);
    uint32_t state = (kind << im->kind_shift) | ((noncompact ? 0u : 1u) << im->compact_bit) |
                     ((ascii ? 1u : 0u) << im->ascii_bit);
    synth_put32(im, obj + (uint64_t)l->uni_state, state);
    if (noncompact)
        synth_put64(im, obj + (uint64_t)l->uni_compact_size, data);
    uint8_t *d = synth_bytes(im, data, data_len);
    for (long i = 0; i < n; i++) {
        if (kind == 1) {
            d[i] = (uint8_t)cps[i];
        } else if (kind == 2) {
            uint16_t u = (uint16_t)cps[i];
            memcpy(d + i * 2, &u, 2);
        } else {
            memcpy(d + i * 4, &cps[i], 4);
        }
    }
    free(cps);
    return obj;
}

static size_t put_varint(uint8_t *o, uint32_t v)
{
    size_t n = 0;
    while (v >= 64) {
        o[n++] = (uint8_t)(0x40 | (v & 0x3F));
        v >>= 6;
    }
    o[n++] = (uint8_t)v;
    return n;
}

static size_t put_svarint(uint8_t *o, int32_t v)
{
    uint32_t u = v < 0 ? ((uint32_t)(-(int64_t)v) << 1) | 1u : (uint32_t)v << 1;
    return put_varint(o, u);
}

/* Encodes the described entries: long form for located ones, the
 * no-location form otherwise. */
static uint64_t linetable_object(synth_image *im, const synth_code *c, int *units_out)
{
    uint8_t buf[SYNTH_MAX_ENTRIES * 24];
    size_t n = 0;
    int line = c->firstlineno, units = 0;
    for (int i = 0; i < c->nlocs; i++) {
        const synth_loc *e = &c->locs[i];
        units += e->units;
        if (e->line == FP_POS_NONE) {
            buf[n++] = (uint8_t)(0x80 | (15 << 3) | (e->units - 1));
            continue;
        }
        buf[n++] = (uint8_t)(0x80 | (LOC_LONG_FORM << 3) | (e->units - 1));
        n += put_svarint(buf + n, e->line - line);
        line = e->line;
        n += put_varint(buf + n, (uint32_t)(e->end_line - e->line));
        n += put_varint(buf + n, (uint32_t)(e->column + 1));
        n += put_varint(buf + n, (uint32_t)(e->end_column + 1));
    }
    const fpi_layout *l = &im->l;
    uint64_t obj = synth_alloc(im, (size_t)l->bytes_sval + n + 1);
    if (!obj)
        return 0;
    synth_put64(im, obj + (uint64_t)l->ob_type, im->type_bytes);
    synth_put64(im, obj + (uint64_t)l->ob_size, n);
    memcpy(synth_bytes(im, obj + (uint64_t)l->bytes_sval, n), buf, n);
    *units_out = units;
    return obj;
}

int synth_code_object(synth_image *im, const synth_code *c, bool want_tlbc, built_code *out)
{
    const fpi_layout *l = &im->l;
    int units = 0;
    uint64_t lt = linetable_object(im, c, &units);
    uint64_t qn = synth_str_object(im, c->qualname, c->noncompact_names);
    uint64_t nm = synth_str_object(im, c->name, c->noncompact_names);
    uint64_t fn = synth_str_object(im, c->filename, c->noncompact_names);
    if (!lt || !qn || !nm || !fn)
        return -1;
    uint64_t co = synth_alloc(im, (size_t)l->co_code_adaptive + (size_t)units * 2);
    if (!co)
        return -1;
    synth_put64(im, co + (uint64_t)l->ob_type, im->type_code);
    synth_put64(im, co + (uint64_t)l->ob_size, (uint64_t)units);
    synth_put32(im, co + (uint64_t)l->co_firstlineno, (uint32_t)c->firstlineno);
    synth_put32(im, co + (uint64_t)l->co_firsttraceable, (uint32_t)c->firsttraceable);
    if (l->co_nlocalsplus != FPI_OFF_NONE)
        synth_put32(im, co + (uint64_t)l->co_nlocalsplus, SYNTH_NLOCALSPLUS);
    synth_put64(im, co + (uint64_t)l->co_qualname, qn);
    synth_put64(im, co + (uint64_t)l->co_name, nm);
    synth_put64(im, co + (uint64_t)l->co_filename, fn);
    synth_put64(im, co + (uint64_t)l->co_linetable, lt);
    out->src = c;
    out->addr = co;
    /* Every unit holds an instruction at which a caller can be suspended
     * under a function's frame (not one of generators only, not one that
     * pushes only generator frames), so any unit a frame names passes the
     * walker's call-site checks; a frame under a generator's frame is put
     * at SEND or FOR_ITER (place_resumes). */
    for (int u = 0; im->fill_op >= 0 && u < units; u++)
        synth_put8(im, co + (uint64_t)l->co_code_adaptive + 2u * (uint64_t)u, (uint8_t)im->fill_op);
    memset(out->tlbc_copies, 0, sizeof out->tlbc_copies);
    out->tlbc_copies[0] = co + (uint64_t)l->co_code_adaptive;
    if (want_tlbc && l->co_tlbc != FPI_OFF_NONE) {
        uint64_t arr = synth_alloc(im, 8 + 8 * SYNTH_MAX_TLBC);
        if (!arr)
            return -1;
        synth_put64(im, arr, SYNTH_MAX_TLBC);
        synth_put64(im, arr + 8, out->tlbc_copies[0]);
        for (int i = 1; i < SYNTH_MAX_TLBC; i++) {
            out->tlbc_copies[i] = synth_alloc(im, (size_t)units * 2 + 2);
            if (!out->tlbc_copies[i])
                return -1;
            synth_put64(im, arr + 8 + 8 * (uint64_t)i, out->tlbc_copies[i]);
        }
        synth_put64(im, co + (uint64_t)l->co_tlbc, arr);
    }
    return 0;
}
