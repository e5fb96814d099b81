/* fuzz_synth_pyobj.c — 3.11-3.15's container readers (pyobj.h, pyset.h),
 * which the asyncio task graph of those versions is read through, over
 * synthetic objects.  The input is decoded into a description: a layout
 * (3.11, 3.12, 3.13, 3.13t), a dict — its table's size, its kind
 * (str-keyed, general, split), its entries (str keys of every PEP 393
 * kind, values, removed ones), the instant a thread of the target is
 * caught at (settled; a removal under way; an addition whose count is
 * stored first; a table rebuilt and published before its entry count,
 * finished or not) — and a set: its members, removed entries and its own
 * instant (settled; an addition into a removed slot, counted first; a
 * removal between its two stores; a table being rebuilt).  The objects are
 * laid out in a synthetic image with the layout's offsets, and what the
 * readers return must be what pyobj.h and pyset.h promise for that
 * instant: every live entry exactly, in order, each str key found by a
 * lookup with and without a hint, or FP_E_CORRUPT where the instant
 * cannot be read whole.
 *
 * The input's tail then flips bytes of the objects: the readers must not
 * fault, and what they return when they succeed must keep their counting
 * contracts (a dict's entries its count or one more; a set's members its
 * count, or one fewer only where a removed entry shows the dummy key).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug_offsets.h"
#include "dict_keys.h"
#include "fuzz_common.h"
#include "pyobj.h"
#include "pyset.h"
#include "synth_image.h"
#include "synth_input.h"

#define FZ_DICT_MAX 40u     /* entries laid out (the room of 2^6 slots is 42) */
#define FZ_SET_MAX 24u      /* members of a set of at most 2^6 slots */
#define FZ_FLIPS_MAX 16u
#define IX_EMPTY 0xffu      /* FPI_DK_IX_EMPTY in every width: all bytes 0xff */
#define VALUE(k) (0x6000u + (uint64_t)(k))
#define DUMMY_KEY 0x9005u   /* the set type's dummy object, as removed entries hold it */

enum dict_kind { KIND_GENERAL = FPI_DK_KIND_GENERAL, KIND_UNICODE = FPI_DK_KIND_UNICODE, KIND_SPLIT = FPI_DK_KIND_SPLIT };
enum dict_at { DICT_SETTLED, DICT_REMOVING, DICT_ADDING, DICT_REBUILT, DICT_REBUILT_UNFINISHED, DICT_AT_N };
enum set_at { SET_SETTLED, SET_ADDING_INTO_REMOVED, SET_REMOVING_HALFWAY, SET_REBUILDING, SET_AT_N };

typedef struct fz_dict {
    unsigned log2, kind, at;
    size_t n;                               /* entries laid out */
    bool removed[FZ_DICT_MAX];
    char names[FZ_DICT_MAX][100];
    bool noncompact[FZ_DICT_MAX];           /* a legacy str object */
    bool findable[FZ_DICT_MAX];             /* a compact ASCII str: a lookup by name finds it */
} fz_dict;

typedef struct fz_set {
    unsigned log2, at;
    size_t n;                               /* members, at distinct slots */
    size_t slot[FZ_SET_MAX];
    bool removed_entry;                     /* a settled removed entry somewhere */
} fz_set;

static bool is_ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return false;
    return true;
}

static void decode_dict(fz_cursor *c, fz_dict *d)
{
    d->log2 = 3 + fz_next_byte(c) % 6; /* 8 .. 256 slots: 1- and 2-byte indices */
    d->kind = fz_next_byte(c) % 3;
    d->at = fz_next_byte(c) % DICT_AT_N;
    if (d->kind == KIND_SPLIT && d->at >= DICT_REBUILT)
        d->at = DICT_SETTLED; /* a split table is never rebuilt in place */
    size_t room = fpi_dk_room(d->log2);
    d->n = fz_next_byte(c) % ((room < FZ_DICT_MAX ? room : FZ_DICT_MAX) + 1);
    for (size_t k = 0; k < d->n; k++) {
        const char *name = fz_next_name(c);
        bool taken = strlen(name) >= sizeof d->names[k];
        for (size_t j = 0; j < k && !taken; j++)
            taken = strcmp(d->names[j], name) == 0;
        /* a dict holds a key once: a repeated name becomes one of its own */
        if (taken)
            snprintf(d->names[k], sizeof d->names[k], "~k%02zu", k);
        else
            memcpy(d->names[k], name, strlen(name) + 1);
        d->noncompact[k] = fz_next_byte(c) % 8 == 0;
        d->findable[k] = is_ascii(d->names[k]) && !d->noncompact[k];
        /* a rebuilt table holds no removed entry */
        d->removed[k] = d->at < DICT_REBUILT && fz_next_byte(c) % 4 == 0;
    }
}

static size_t dict_live(const fz_dict *d)
{
    size_t live = 0;
    for (size_t k = 0; k < d->n; k++)
        live += !d->removed[k];
    return live;
}

/* The bytes of a split table's values array for 2^log2 slots: its
 * header word, then a value for every entry the table has room for. */
static size_t dict_values_bytes(unsigned log2)
{
    return 8 + fpi_dk_room(log2) * 8;
}

/* Lays d out: its dict object's address, or 0 when the image is full. */
static uint64_t build_dict(synth_image *img, const fpi_pyobj *o, const fz_dict *d, fz_cursor *c, uint64_t *keys_out,
                           uint64_t *values_out)
{
    size_t slots = (size_t)1 << d->log2, width = d->log2 < 8 ? 1 : 2, room = fpi_dk_room(d->log2);
    size_t esize = d->kind == KIND_GENERAL ? 24 : 16, live = dict_live(d);
    uint64_t dict = synth_alloc(img, 96), keys = synth_alloc(img, FPI_DK_HEADER + slots * width + room * esize);
    uint64_t values = d->kind == KIND_SPLIT ? synth_alloc(img, dict_values_bytes(d->log2)) : 0;
    if (!dict || !keys || (d->kind == KIND_SPLIT && !values))
        return 0;
    uint8_t *h = synth_bytes(img, keys, FPI_DK_HEADER + slots * width);
    h[FPI_DK_REFCNT] = 1;
    h[FPI_DK_LOG2_SIZE] = (uint8_t)d->log2;
    h[FPI_DK_LOG2_INDEX_BYTES] = (uint8_t)(d->log2 + (width == 2));
    h[FPI_DK_KIND] = (uint8_t)d->kind;
    bool rebuilt = d->at == DICT_REBUILT || d->at == DICT_REBUILT_UNFINISHED;
    /* a published rebuild stores its room and count last: still a new table's */
    synth_put64(img, keys + FPI_DK_USABLE, rebuilt ? room : room - d->n);
    synth_put64(img, keys + FPI_DK_NENTRIES, rebuilt ? 0 : d->n);
    memset(h + FPI_DK_HEADER, IX_EMPTY, slots * width);
    /* the index slots built so far: all but the last few of an unfinished rebuild */
    size_t indexed = d->n;
    if (d->at == DICT_REBUILT_UNFINISHED && d->n)
        indexed = d->n - 1 - fz_next_byte(c) % d->n;
    for (size_t k = 0; k < d->n; k++) {
        uint64_t key = synth_str_object(img, d->names[k], d->noncompact[k]);
        if (!key)
            return 0;
        uint64_t e = keys + FPI_DK_HEADER + slots * width + k * esize, kk = key, vv = VALUE(k);
        if (d->removed[k] && d->kind != KIND_SPLIT)
            kk = vv = 0; /* delitem clears a combined entry */
        if (d->kind == KIND_GENERAL)
            synth_put64(img, e, 0x1234u + k); /* the hash, never read */
        synth_put64(img, e + (esize - 16), kk);
        if (d->kind == KIND_SPLIT)
            synth_put64(img, values + (uint64_t)o->values_start + k * 8, d->removed[k] ? 0 : vv);
        else
            synth_put64(img, e + (esize - 8), vv);
        if (k >= indexed)
            continue;
        /* a free slot from the input's choice on, as probing finds one */
        size_t s = fz_next_byte(c) % slots;
        while (h[FPI_DK_HEADER + s * width] != IX_EMPTY || (width == 2 && h[FPI_DK_HEADER + s * width + 1] != IX_EMPTY))
            s = (s + 1) % slots;
        int16_t ix = d->removed[k] && d->kind != KIND_SPLIT ? FPI_DK_IX_DUMMY : (int16_t)k;
        if (width == 1)
            h[FPI_DK_HEADER + s] = (uint8_t)(int8_t)ix;
        else
            memcpy(h + FPI_DK_HEADER + s * 2, &ix, 2);
    }
    uint64_t used = live;
    if (d->at == DICT_REMOVING && live)
        used = live - 1; /* the count lowered, the entry not cleared yet */
    else if (d->at == DICT_ADDING)
        used = live + 1; /* the count raised, the entry not stored yet */
    synth_put64(img, dict + (uint64_t)o->dict_used, used);
    synth_put64(img, dict + (uint64_t)o->dict_keys, keys);
    synth_put64(img, dict + (uint64_t)o->dict_values, values);
    *keys_out = keys;
    *values_out = values;
    return dict;
}

/* Whether the dict as laid out is promised whole, its live entries
 * exactly: settled, a removal under way (the dict as before it), a
 * finished rebuild; not an addition counted first or an unfinished
 * rebuild (of an empty table: an empty dict, whole). */
static bool dict_readable(const fz_dict *d)
{
    return d->at == DICT_SETTLED || d->at == DICT_REMOVING || d->at == DICT_REBUILT ||
           (d->at == DICT_REBUILT_UNFINISHED && d->n == 0);
}

static void check_dict(const char *id, const fpi_pyobj *o, const fz_dict *d, uint64_t dict)
{
    uint64_t *pairs = NULL;
    size_t n = 0, live = dict_live(d);
    int rc = fpi_pyobj_dict_items(o, dict, &pairs, &n);
    if (!dict_readable(d)) {
        FUZZ_CHECK(rc == FP_E_CORRUPT, "%s: dict at instant %u (%zu entries, kind %u) read: rc %d, %zu pairs", id,
                   d->at, d->n, d->kind, rc, n);
        free(pairs);
        return;
    }
    FUZZ_CHECK(rc == FP_OK, "%s: dict at instant %u (%zu entries, kind %u, 2^%u slots) refused: %s", id, d->at, d->n,
               d->kind, d->log2, fp_session_get_errmsg(o->s));
    FUZZ_CHECK(n == live, "%s: dict of %zu live entries read as %zu", id, live, n);
    for (size_t k = 0, j = 0; k < d->n; k++) {
        if (d->removed[k])
            continue;
        FUZZ_CHECK(pairs[2 * j + 1] == VALUE(k), "%s: pair %zu holds value 0x%llx, entry %zu's expected", id, j,
                   (unsigned long long)pairs[2 * j + 1], k);
        j++;
    }
    free(pairs);
    /* each str key found, with and without a hint; a removed one is absent */
    fpi_dict_hint hint = {0};
    for (int round = 0; round < 2; round++)
        for (size_t k = 0; k < d->n; k++) {
            if (!d->findable[k])
                continue;
            uint64_t v = 1;
            rc = fpi_pyobj_dict_get_hinted(o, dict, d->names[k], &hint, &v);
            FUZZ_CHECK(rc == FP_OK, "%s: lookup of entry %zu failed: %s", id, k, fp_session_get_errmsg(o->s));
            FUZZ_CHECK(v == (d->removed[k] ? 0 : VALUE(k)), "%s: lookup of entry %zu (%s) gave 0x%llx", id, k,
                       d->removed[k] ? "removed" : "live", (unsigned long long)v);
        }
    uint64_t v = 1;
    FUZZ_CHECK(fpi_pyobj_dict_get(o, dict, "~absent", &v) == FP_OK && v == 0, "%s: an absent key was found", id);
}

static void decode_set(fz_cursor *c, fz_set *st)
{
    st->log2 = 3 + fz_next_byte(c) % 4;
    st->at = fz_next_byte(c) % SET_AT_N;
    size_t slots = (size_t)1 << st->log2, most = slots * 3 / 5; /* a set resizes at 3/5 full */
    st->n = fz_next_byte(c) % ((most < FZ_SET_MAX ? most : FZ_SET_MAX) + 1);
    st->removed_entry = st->at == SET_ADDING_INTO_REMOVED || st->at == SET_REMOVING_HALFWAY ||
                        (st->at == SET_SETTLED && fz_next_byte(c) % 2);
    if (st->at == SET_REBUILDING || st->at == SET_REMOVING_HALFWAY) {
        if (st->n == 0)
            st->at = SET_SETTLED; /* nothing being moved or removed */
    }
    bool taken[64] = {false};
    for (size_t k = 0; k < st->n; k++) {
        size_t s = fz_next_byte(c) % slots;
        while (taken[s])
            s = (s + 1) % slots;
        taken[s] = true;
        st->slot[k] = s;
    }
}

/* Lays st out: the set object's address, or 0 when the image is full. */
static uint64_t build_set(synth_image *img, const fpi_pyobj *o, const fz_set *st, uint64_t *table_out,
                          bool *removed_out)
{
    size_t slots = (size_t)1 << st->log2;
    uint64_t set = synth_alloc(img, 96), table = synth_alloc(img, slots * 16);
    if (!set || !table)
        return 0;
    bool used_slot[64] = {false};
    for (size_t k = 0; k < st->n; k++) {
        used_slot[st->slot[k]] = true;
        synth_put64(img, table + st->slot[k] * 16, 0x9100u + k);
        synth_put64(img, table + st->slot[k] * 16 + 8, 0x77u + k);
    }
    /* the one settled removed entry (dummy key, hash -1), where it fits */
    size_t spare = 0;
    while (spare < slots && used_slot[spare])
        spare++;
    bool removed = st->removed_entry && spare < slots;
    if (removed) {
        synth_put64(img, table + spare * 16, DUMMY_KEY);
        synth_put64(img, table + spare * 16 + 8, UINT64_MAX);
    }
    uint64_t used = st->n;
    if (st->at == SET_ADDING_INTO_REMOVED && removed)
        used = st->n + 1; /* counted, its key not stored in the removed slot yet */
    else if (st->at == SET_REMOVING_HALFWAY && removed) {
        /* the last member being removed: its key the dummy, its hash not yet */
        synth_put64(img, table + st->slot[st->n - 1] * 16, DUMMY_KEY);
        used = st->n; /* its count lowered last */
    } else if (st->at == SET_REBUILDING)
        used = st->n + 1; /* a member not moved to the new table yet */
    synth_put64(img, set + (uint64_t)o->set_used, used);
    synth_put64(img, set + (uint64_t)o->set_mask, slots - 1);
    synth_put64(img, set + (uint64_t)o->set_table, table);
    *table_out = table;
    *removed_out = removed;
    return set;
}

static void check_set(const char *id, const fpi_pyobj *o, const fz_set *st, uint64_t set, bool removed)
{
    const fpi_set_places at = {.used = o->set_used, .mask = o->set_mask, .table = o->set_table};
    for (int in_flight = 0; in_flight < 2; in_flight++) {
        uint64_t *items = NULL;
        size_t n = 0;
        int rc = fpi_set_members(o->s, set, &at, 1u << 10, in_flight, "a set", &items, &n);
        /* what the instant promises: every member but one being removed,
         * each once, in table order */
        size_t expect = st->n;
        bool whole = true;
        switch (st->at) {
        case SET_ADDING_INTO_REMOVED: whole = !removed || in_flight; break;
        case SET_REMOVING_HALFWAY:
            if (removed && in_flight)
                expect = st->n - 1;
            break;
        case SET_REBUILDING: whole = false; break;
        default: break;
        }
        if (!whole) {
            FUZZ_CHECK(rc == FP_E_CORRUPT, "%s: set at instant %u (%zu members, in flight %d) read: rc %d, %zu", id,
                       st->at, st->n, in_flight, rc, n);
            free(items);
            continue;
        }
        FUZZ_CHECK(rc == FP_OK, "%s: set at instant %u (%zu members, in flight %d) refused: %s", id, st->at, st->n,
                   in_flight, fp_session_get_errmsg(o->s));
        FUZZ_CHECK(n == expect, "%s: set at instant %u read %zu members, expected %zu", id, st->at, n, expect);
        for (size_t i = 0; i < n; i++) {
            bool found = false;
            for (size_t k = 0; k < st->n && !found; k++)
                found = items[i] == 0x9100u + k ||
                        (items[i] == DUMMY_KEY && st->at == SET_REMOVING_HALFWAY && !in_flight && k == st->n - 1);
            FUZZ_CHECK(found, "%s: set member 0x%llx was never in it", id, (unsigned long long)items[i]);
        }
        free(items);
    }
}

/* After the flips: no fault, and a success keeps the counting contracts. */
static void check_flipped(const char *id, const fpi_pyobj *o, synth_image *img, uint64_t dict, uint64_t set)
{
    uint64_t *pairs = NULL, used = 0, *items = NULL, sused = 0, v = 0;
    size_t n = 0;
    memcpy(&used, synth_bytes(img, dict + (uint64_t)o->dict_used, 8), 8);
    int rc = fpi_pyobj_dict_items(o, dict, &pairs, &n);
    FUZZ_CHECK_MESSAGE(rc, fp_session_get_errmsg(o->s));
    if (rc == FP_OK) {
        FUZZ_CHECK(n == used || n == used + 1, "%s: a flipped dict read as %zu entries, %llu counted", id, n,
                   (unsigned long long)used);
        for (size_t k = 0; k < n; k++)
            FUZZ_CHECK(pairs[2 * k] && pairs[2 * k + 1], "%s: a flipped dict's pair %zu is empty", id, k);
    }
    free(pairs);
    fpi_dict_hint hint = {0};
    (void)fpi_pyobj_dict_get_hinted(o, dict, "~k00", &hint, &v);
    (void)fpi_pyobj_dict_get_hinted(o, dict, "~k00", &hint, &v);
    memcpy(&sused, synth_bytes(img, set + (uint64_t)o->set_used, 8), 8);
    rc = fpi_pyobj_set_items(o, set, &items, &n);
    if (rc == FP_OK)
        FUZZ_CHECK(n == sused || n + 1 == sused, "%s: a flipped set read as %zu members, %llu counted", id, n,
                   (unsigned long long)sused);
    free(items);
}

static const char *const LAYOUTS[] = {"3.11", "3.12", "3.13", "3.13t", "3.14", "3.14t", "3.15", "3.15t"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_cursor c = {data, size, 0};
    const char *id = LAYOUTS[fz_next_byte(&c) % (sizeof LAYOUTS / sizeof *LAYOUTS)];
    uint8_t *table = NULL;
    synth_image *img = NULL;
    fp_session *s = NULL;
    fp_sample *sm = NULL;
    fp_reader rd;
    fz_dict *d = calloc(1, sizeof *d);
    fz_set st = {0};
    fpi_layout probe;
    if (!d || !fz_layout_table(id, &table, &probe))
        goto out;
    const synth_thread th = {4242, 4242, true, NULL, 0};
    const synth_desc desc = {&th, 1, NULL, 0};
    char err[512];
    if (synth_build(id, table, FPI_DEBUG_OFFSETS_READ, &desc, &img, err, sizeof err) != 0)
        goto out;
    int rc = fz_attach(img, &rd, &s, &sm);
    if (rc == FP_E_NOMEM)
        goto out;
    FUZZ_CHECK(rc == FP_OK, "%s: attach failed: %s", id, fp_session_get_errmsg(s));
    fpi_pyobj o;
    FUZZ_CHECK(fpi_pyobj_init(&o, s), "%s: no object reader", id);
    decode_dict(&c, d);
    decode_set(&c, &st);
    uint64_t keys = 0, values = 0, stable = 0;
    bool removed = false; /* the set holds a settled removed entry */
    uint64_t dict = build_dict(img, &o, d, &c, &keys, &values);
    uint64_t set = dict ? build_set(img, &o, &st, &stable, &removed) : 0;
    if (!set)
        goto out; /* the image is full */
    check_dict(id, &o, d, dict);
    check_set(id, &o, &st, set, removed);
    /* the tail: flips of the objects' bytes */
    const uint64_t at[] = {dict, keys, values, set, stable};
    const size_t len[] = {96, FPI_DK_HEADER + ((size_t)2 << d->log2), dict_values_bytes(d->log2), 96,
                          (size_t)16 << st.log2};
    size_t flips = fz_next_byte(&c) % (FZ_FLIPS_MAX + 1);
    for (size_t f = 0; f < flips; f++) {
        size_t r = fz_next_byte(&c) % 5, off = fz_next_u16(&c) % len[r];
        uint8_t x = fz_next_byte(&c);
        uint8_t *p = at[r] ? synth_bytes(img, at[r] + off, 1) : NULL;
        if (p)
            *p ^= x ? x : 0x80;
    }
    if (flips)
        check_flipped(id, &o, img, dict, set);
out:
    fz_release(sm, s, img, table);
    free(d);
    return 0;
}
