/* fuzz_linetable.c — the location-table decoder (linetable.c) against a
 * second, deliberately simple reference decoder written here.
 *
 * Input: int32 firstlineno (LE), uint32 code unit to look up (LE), then the
 * raw co_linetable bytes.  Checked: no crash; the iterator does at most one
 * step per table byte; the iterator yields exactly the reference's entries
 * and fails (FP_E_CORRUPT) at the same entry; a failed iterator stays
 * failed; fpi_linetable_lookup agrees with the reference for the given unit,
 * every entry's first and last unit and a unit past the end.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz_common.h"
#include "frameproof/frameproof.h"
#include "linetable.h"

#define PREFIX_BYTES 8
/* Inputs longer than this are cut (the decoder is linear; keep runs fast). */
#define MAX_TABLE 65536
/* Lookups checked per input (each costs a pass over the table). */
#define MAX_LOOKUP_CHECKS 64

/* ---- reference decoder --------------------------------------------------
 * Reads the format as CPython's Objects/locations.md describes it, with the
 * validation rules linetable.h documents: an entry starts with a byte whose
 * bit 7 is set and every other byte of it has bit 7 clear; a varint has at
 * most 6 chunks and fits 32 bits; every line/column value and the running
 * line fit int32; the code-unit counter fits 32 bits. */

typedef struct ref_entry {
    int64_t start, length;
    int64_t line, end_line, col, end_col;
} ref_entry;

typedef struct ref_result {
    ref_entry *e;
    size_t n;
    bool corrupt;   /* decoding stopped at entry n with an error */
} ref_result;

typedef struct ref_in {
    const uint8_t *p;
    size_t len, pos;
} ref_in;

static bool ref_byte(ref_in *in, int64_t *out)
{
    if (in->pos >= in->len || (in->p[in->pos] & 0x80))
        return false;
    *out = in->p[in->pos++];
    return true;
}

static bool ref_varint(ref_in *in, int64_t *out)
{
    int64_t value = 0, b;
    for (int chunk = 0;; chunk++) {
        if (chunk == 6 || !ref_byte(in, &b))
            return false;
        value += (b & 63) << (6 * chunk);
        if (!(b & 64))
            break;
    }
    if (value > (int64_t)UINT32_MAX)
        return false;
    *out = value;
    return true;
}

static bool ref_svarint(ref_in *in, int64_t *out)
{
    int64_t u;
    if (!ref_varint(in, &u))
        return false;
    *out = (u & 1) ? -(u >> 1) : (u >> 1);
    return true;
}

static bool fits32(int64_t v)
{
    return v >= INT32_MIN && v <= INT32_MAX;
}

static void ref_decode(const uint8_t *t, size_t len, int32_t firstlineno, ref_result *r)
{
    ref_in in = {t, len, 0};
    int64_t line = firstlineno, unit = 0;
    r->n = 0;
    r->corrupt = false;
    while (in.pos < len) {
        uint8_t first = t[in.pos++];
        if (!(first & 0x80)) {
            r->corrupt = true;
            return;
        }
        int code = (first >> 3) & 15;
        int64_t length = (first & 7) + 1;
        ref_entry e = {unit, length, -1, -1, -1, -1};
        int64_t a, b, c, d;
        bool ok = true;
        if (code == 15) {
            /* no location */
        } else if (code == 14) {
            ok = ref_svarint(&in, &a) && ref_varint(&in, &b) && ref_varint(&in, &c) && ref_varint(&in, &d);
            if (ok) {
                line += a;
                e.line = line;
                e.end_line = line + b;
                e.col = c - 1;
                e.end_col = d - 1;
            }
        } else if (code == 13) {
            ok = ref_svarint(&in, &a);
            if (ok) {
                line += a;
                e.line = e.end_line = line;
            }
        } else if (code >= 10) {
            ok = ref_byte(&in, &a) && ref_byte(&in, &b);
            if (ok) {
                line += code - 10;
                e.line = e.end_line = line;
                e.col = a;
                e.end_col = b;
            }
        } else {
            ok = ref_byte(&in, &a);
            if (ok) {
                e.line = e.end_line = line;
                e.col = code * 8 + ((a >> 4) & 7);
                e.end_col = e.col + (a & 15);
            }
        }
        if (!ok || !fits32(line) || !fits32(e.line) || !fits32(e.end_line) || !fits32(e.col) ||
            !fits32(e.end_col) || unit + length > (int64_t)UINT32_MAX) {
            r->corrupt = true;
            return;
        }
        r->e[r->n++] = e;
        unit += length;
    }
}

/* What fpi_linetable_lookup must answer for `unit`. */
static int ref_lookup(const ref_result *r, uint32_t unit, fpi_position *pos)
{
    for (size_t i = 0; i < r->n; i++) {
        const ref_entry *e = &r->e[i];
        if ((int64_t)unit >= e->start && (int64_t)unit < e->start + e->length) {
            *pos = (fpi_position){(int32_t)e->line, (int32_t)e->end_line, (int32_t)e->col, (int32_t)e->end_col};
            return 0;
        }
    }
    if (r->corrupt)
        return FP_E_CORRUPT;
    *pos = (fpi_position){FP_POS_NONE, FP_POS_NONE, FP_POS_NONE, FP_POS_NONE};
    return 0;
}

static void check_lookup(const uint8_t *t, size_t len, int32_t first, const ref_result *r, uint32_t unit)
{
    fpi_position want, got;
    memset(&got, 0x5a, sizeof got);
    int wrc = ref_lookup(r, unit, &want);
    int grc = fpi_linetable_lookup(t, len, first, unit, &got);
    FUZZ_CHECK(grc == wrc, "lookup(%u): library %d, reference %d", unit, grc, wrc);
    if (grc == 0)
        FUZZ_CHECK(memcmp(&got, &want, sizeof got) == 0, "lookup(%u): library (%d,%d,%d,%d) reference (%d,%d,%d,%d)",
                   unit, got.line, got.end_line, got.column, got.end_column, want.line, want.end_line, want.column,
                   want.end_column);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < PREFIX_BYTES)
        return 0;
    int32_t first = (int32_t)fpi_le_get_u32(data);
    uint32_t unit = fpi_le_get_u32(data + 4);
    const uint8_t *t = data + PREFIX_BYTES;
    size_t len = size - PREFIX_BYTES;
    if (len > MAX_TABLE)
        len = MAX_TABLE;

    /* Each entry takes at least one byte. */
    ref_result ref = {malloc((len ? len : 1) * sizeof(ref_entry)), 0, false};
    if (!ref.e)
        return 0;
    ref_decode(t, len, first, &ref);

    fpi_linetable_iter it;
    fpi_linetable_entry e;
    fpi_linetable_iter_init(&it, t, len, first);
    size_t n = 0, steps = 0;
    int rc;
    while ((rc = fpi_linetable_next(&it, &e)) == 1) {
        FUZZ_CHECK(++steps <= len, "more iterator steps (%zu) than table bytes (%zu)", steps, len);
        FUZZ_CHECK(n < ref.n, "library yields entry %zu, reference has %zu entries", n, ref.n);
        const ref_entry *w = &ref.e[n];
        FUZZ_CHECK(e.start == (uint32_t)w->start && e.length == (uint32_t)w->length,
                   "entry %zu: units [%u,+%u) vs reference [%lld,+%lld)", n, e.start, e.length, (long long)w->start,
                   (long long)w->length);
        FUZZ_CHECK(e.pos.line == w->line && e.pos.end_line == w->end_line && e.pos.column == w->col &&
                       e.pos.end_column == w->end_col,
                   "entry %zu: (%d,%d,%d,%d) vs reference (%lld,%lld,%lld,%lld)", n, e.pos.line, e.pos.end_line,
                   e.pos.column, e.pos.end_column, (long long)w->line, (long long)w->end_line, (long long)w->col,
                   (long long)w->end_col);
        n++;
    }
    FUZZ_CHECK(rc == 0 || rc == FP_E_CORRUPT, "iterator returned %d", rc);
    FUZZ_CHECK(n == ref.n, "library decoded %zu entries, reference %zu", n, ref.n);
    FUZZ_CHECK((rc == FP_E_CORRUPT) == ref.corrupt, "library %s, reference %s", rc ? "corrupt" : "ok",
               ref.corrupt ? "corrupt" : "ok");
    if (rc == FP_E_CORRUPT)
        FUZZ_CHECK(fpi_linetable_next(&it, &e) == FP_E_CORRUPT, "a failed iterator recovered");
    else
        FUZZ_CHECK(fpi_linetable_next(&it, &e) == 0, "a finished iterator yielded more");

    check_lookup(t, len, first, &ref, unit);
    size_t stride = ref.n / MAX_LOOKUP_CHECKS + 1;
    for (size_t i = 0; i < ref.n; i += stride) {
        check_lookup(t, len, first, &ref, (uint32_t)ref.e[i].start);
        check_lookup(t, len, first, &ref, (uint32_t)(ref.e[i].start + ref.e[i].length - 1));
    }
    uint32_t past = ref.n ? (uint32_t)(ref.e[ref.n - 1].start + ref.e[ref.n - 1].length) : 0;
    check_lookup(t, len, first, &ref, past);
    free(ref.e);
    return 0;
}
