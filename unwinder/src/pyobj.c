/* pyobj.c — CPython 3.11-3.15's dicts, sets, lists, instance attributes,
 * weak references and small ints, read from the target (pyobj.h).  The
 * layouts are those of Include/internal/pycore_dict.h, pycore_object.h and
 * the object headers under cpython/ of each version, which keep every field at a fixed
 * distance from the end of the object header. */
#include <stdlib.h>
#include <string.h>

#include "pyobj.h"
#include "dict_keys.h"
#include "pyset.h"
#include "read.h"
#include "typed_load.h"

#define U(x) ((unsigned long long)(x))
#define TPFLAGS_INLINE_VALUES (1ull << 2)   /* 3.13 */
#define TPFLAGS_MANAGED_DICT (1ull << 4)
#define INLINE_VALID 3             /* PyDictValues (3.13): capacity, size, embedded, valid */
#define LONG311_DIGITS 8           /* after ob_size */
#define LONG_SIGN_MASK 3u          /* 3.12+ lv_tag: sign in the low bits, digits from bit 3 */
#define LONG_NDIGITS_SHIFT 3
#define LONG_DIGIT_BITS 30u
#define LONG_MAX_DIGITS 3u         /* up to 90 bits: every 64-bit value */
#define TYPE_BASES_MAX 32          /* tp_base steps followed */
#define TYPE_NAME_MAX 64
#define WEAKREF_TYPE "weakref.ReferenceType"

bool fpi_pyobj_init(fpi_pyobj *o, fp_session *s)
{
    const fpi_layout *l = &s->layout;
    if (l->minor < 11 || l->minor > 15)
        return false;
    const int32_t h = l->ob_type + FPI_PTR_SIZE;
    *o = (fpi_pyobj){
        .s = s, .minor = l->minor, .hdr = h,
        /* PyTypeObject: ob_size, tp_name, tp_basicsize ... tp_flags at 152,
         * tp_base at 240 and tp_dictoffset at 272 past the header; the heap
         * type's cached keys 8 bytes further on from 3.12, 8 more in 3.15 */
        .tp_basicsize = h + 16, .tp_flags = h + 152, .tp_base = h + 240, .tp_dictoffset = h + 272,
        .ht_cached_keys = h + (l->minor == 11 ? 856 : l->minor <= 14 ? 864 : 872),
        .dict_used = h, .dict_keys = h + 16, .dict_values = h + 24, .values_start = l->minor >= 13 ? 8 : 0,
        /* before the object: 3.11 values then dict, 3.12 one tagged word,
         * 3.13 the dict (free-threaded: right before the header) */
        .managed_dict = l->free_threaded ? -8 : -24, .managed_values = l->minor == 11 ? -32 : FPI_OFF_NONE,
        .set_used = h + 8, .set_mask = h + 16, .set_table = h + 24,
        .list_size = h, .list_items = h + 8, .wr_object = h,
        .tuple_items = h + (l->minor >= 14 ? 16 : 8), /* 3.14: the tuple's hash cached before its items */
        .meth_self = h + 8, .func_qualname = h + 24, .func_closure = h + 56, .cell_ref = h,
    };
    return true;
}

static int read_word(const fpi_pyobj *o, uint64_t addr, uint64_t *out, const char *what)
{
    uint8_t b[8];
    *out = 0;
    int rc = fpi_read(o->s, addr, b, sizeof b);
    if (rc)
        return fpi_err_code(&o->s->err, rc, "cannot read %s at 0x%llx", what, U(addr));
    *out = fpi_load_u64(b, 0);
    return FP_OK;
}

int fpi_pyobj_str_is(const fpi_pyobj *o, uint64_t addr, const char *key, bool *out)
{
    const fpi_layout *l = &o->s->layout;
    size_t n = strlen(key), len = (size_t)l->uni_ascii_size + n;
    uint8_t b[FPI_STR_HEADER_MAX + TYPE_NAME_MAX];
    *out = false;
    if (len > sizeof b)
        return FP_OK;
    int rc = fpi_read(o->s, addr, b, len), kind = FPI_TYPE_OTHER;
    if (rc) {
        /* a shorter str may end where readable memory does (an image's
         * region): its header alone then says it is not key */
        size_t hdr = (size_t)l->uni_ascii_size;
        if (fpi_read(o->s, addr, b, hdr) == FP_OK && fpi_load_u64(b, l->uni_length) < n)
            return FP_OK;
        return fpi_err_code(&o->s->err, rc, "cannot read a dict key at 0x%llx", U(addr));
    }
    if ((rc = fpi_type_kind(o->s, fpi_load_u64(b, l->ob_type), &kind)))
        return fpi_err_code(&o->s->err, rc, "cannot read the type of a dict key at 0x%llx", U(addr));
    uint32_t state = fpi_load_u32(b, l->uni_state);
    *out = kind == FPI_TYPE_STR && fpi_load_u64(b, l->uni_length) == n && ((state >> l->uni_compact_bit) & 1u) &&
           ((state >> l->uni_ascii_bit) & 1u) && memcmp(b + l->uni_ascii_size, key, n) == 0;
    return FP_OK;
}

/* The index slot k of a table of 2^log2 slots, w bytes each (signed). */
static int64_t index_at(const uint8_t *ix, unsigned w, size_t k)
{
    switch (w) {
    case 1: return (int8_t)ix[k];
    case 2: return (int16_t)fpi_load_u16(ix, (int32_t)(k * 2));
    case 4: return (int32_t)fpi_load_u32(ix, (int32_t)(k * 4));
    default: return (int64_t)fpi_load_u64(ix, (int32_t)(k * 8));
    }
}

/* Whether a combined keys object whose entry count is still 0 holds a
 * table rebuilt for used entries: dictresize (3.11 through 3.15; and
 * 3.11/3.12's first insertion into an empty dict, which 3.13+ publishes
 * last) publishes the new keys object before it stores its entry count and
 * usable room, which it stores last.  The
 * table is taken as whole only when its index slots name exactly entries
 * 0 .. used-1, each once, no removed slot among them: the indices are
 * built after the entries are copied, in order, so a table caught before
 * its last index is written is refused (FP_E_CORRUPT from the count check,
 * as before). */
static int rebuilt_whole(const fpi_pyobj *o, uint64_t keys, const uint8_t *h, uint64_t used, bool *whole)
{
    unsigned log2 = h[FPI_DK_LOG2_SIZE], log2_index = h[FPI_DK_LOG2_INDEX_BYTES];
    size_t slots = (size_t)1 << log2, room = fpi_dk_room(log2);
    *whole = false;
    if (fpi_load_u64(h, FPI_DK_NENTRIES) != 0 || used == 0 || used > room || fpi_load_u64(h, FPI_DK_USABLE) != room ||
        h[FPI_DK_KIND] == FPI_DK_KIND_SPLIT || log2 > FPI_PYOBJ_MAX_REBUILT_LOG2 || used > FPI_PYOBJ_MAX_ITEMS)
        return FP_OK;
    size_t nbytes = (size_t)1 << log2_index, seen_n = 0;
    uint8_t *ix = malloc(nbytes), *seen = calloc((size_t)used, 1);
    int rc = FP_OK;
    if (!ix || !seen) {
        rc = fpi_err(&o->s->err, FP_E_NOMEM, "out of memory: a dict table of %zu slots", slots);
        goto out;
    }
    if ((rc = fpi_read(o->s, keys + FPI_DK_HEADER, ix, nbytes))) {
        rc = fpi_err_code(&o->s->err, rc, "cannot read the index of a dict at 0x%llx", U(keys));
        goto out;
    }
    for (size_t k = 0; k < slots; k++) {
        int64_t v = index_at(ix, 1u << (log2_index - log2), k);
        if (v == FPI_DK_IX_EMPTY)
            continue;
        if (v < 0 || (uint64_t)v >= used || seen[v])
            goto out;
        seen[v] = 1;
        seen_n++;
    }
    *whole = seen_n == used;
out:
    free(ix);
    free(seen);
    return rc;
}

/* A keys object's shape, checked: its entries start at *at, *esize bytes
 * each, *n of them.  used: the dict's count, or 0 when not known (then a
 * table being rebuilt reads as empty). */
static int keys_shape(const fpi_pyobj *o, uint64_t keys, uint64_t values, uint64_t used, uint64_t *at, size_t *esize,
                      size_t *n)
{
    uint8_t h[FPI_DK_HEADER];
    bool whole = false;
    int rc = fpi_read(o->s, keys, h, sizeof h);
    if (rc)
        return fpi_err_code(&o->s->err, rc, "cannot read the keys of a dict at 0x%llx", U(keys));
    unsigned log2 = h[FPI_DK_LOG2_SIZE], log2_index = h[FPI_DK_LOG2_INDEX_BYTES], kind = h[FPI_DK_KIND];
    int64_t nentries = (int64_t)fpi_load_u64(h, FPI_DK_NENTRIES);
    if (log2 > FPI_DK_MAX_LOG2_SIZE || log2_index < log2 || log2_index > log2 + 3 || kind > FPI_DK_KIND_SPLIT ||
        nentries < 0 || nentries > (int64_t)1 << log2 || (kind == FPI_DK_KIND_SPLIT) != (values != 0))
        return fpi_err(&o->s->err, FP_E_CORRUPT, "dict keys at 0x%llx: invalid (size 2^%u, kind %u, %lld entries)",
                       U(keys), log2, kind, (long long)nentries);
    if (nentries > FPI_PYOBJ_MAX_ITEMS)
        return fpi_err(&o->s->err, FP_E_LIMIT, "dict keys at 0x%llx: %lld entries (limit %u)", U(keys),
                       (long long)nentries, FPI_PYOBJ_MAX_ITEMS);
    if (used && (rc = rebuilt_whole(o, keys, h, used, &whole)))
        return rc;
    *n = whole ? (size_t)used : (size_t)nentries;
    *esize = kind == FPI_DK_KIND_GENERAL ? 24 : 16;
    *at = keys + FPI_DK_HEADER + ((uint64_t)1 << log2_index);
    return FP_OK;
}

/* A keys object's entries (and, split, the values): ent is malloc'd,
 * *esize bytes each, *n of them. */
static int read_keys(const fpi_pyobj *o, uint64_t keys, uint64_t values, uint64_t used, uint8_t **ent, size_t *esize,
                     size_t *n, uint64_t **vals)
{
    uint64_t at = 0;
    *ent = NULL;
    *vals = NULL;
    int rc = keys_shape(o, keys, values, used, &at, esize, n);
    if (rc || !*n)
        return rc;
    *ent = malloc(*n * *esize);
    if (values)
        *vals = malloc(*n * sizeof **vals);
    if (!*ent || (values && !*vals))
        return fpi_err(&o->s->err, FP_E_NOMEM, "out of memory: a dict of %zu entries", *n);
    if ((rc = fpi_read(o->s, at, *ent, *n * *esize)))
        return fpi_err_code(&o->s->err, rc, "cannot read the entries of a dict at 0x%llx", U(at));
    if (values && (rc = fpi_read(o->s, values + (uint64_t)o->values_start, *vals, *n * sizeof **vals)))
        return fpi_err_code(&o->s->err, rc, "cannot read the values of a dict at 0x%llx", U(values));
    return FP_OK;
}

/* Entry k's key and value (0 for an unused one). */
static void entry_at(const uint8_t *ent, size_t esize, const uint64_t *vals, size_t k, uint64_t *key, uint64_t *val)
{
    int32_t at = (int32_t)(k * esize) + (esize == 24 ? 8 : 0);
    *key = fpi_load_u64(ent, at);
    *val = vals ? vals[k] : fpi_load_u64(ent, at + 8);
}

/* The value of key among the entries of keys (values: split; used: the
 * dict's count, 0 when not known), 0 when absent; *index its entry's
 * (SIZE_MAX when absent), *live how many entries hold a key and a value. */
static int lookup_at(const fpi_pyobj *o, uint64_t keys, uint64_t values, uint64_t used, const char *key,
                     uint64_t *value, size_t *index, size_t *live)
{
    uint8_t *ent;
    uint64_t *vals;
    size_t esize = 0, n = 0;
    *value = 0;
    *live = 0;
    int rc = read_keys(o, keys, values, used, &ent, &esize, &n, &vals);
    for (size_t k = 0; !rc && k < n; k++) {
        uint64_t kk, vv;
        bool same;
        entry_at(ent, esize, vals, k, &kk, &vv);
        if (!kk || !vv)
            continue;
        (*live)++;
        if (!*value && (rc = fpi_pyobj_str_is(o, kk, key, &same)) == FP_OK && same) {
            *value = vv;
            *index = k;
        }
    }
    free(ent);
    free(vals);
    return rc;
}

static int lookup(const fpi_pyobj *o, uint64_t keys, uint64_t values, const char *key, uint64_t *value)
{
    size_t index = SIZE_MAX, live = 0;
    return lookup_at(o, keys, values, 0, key, value, &index, &live);
}

/* A dict's count (ma_used) against the entries found live.  One entry
 * more than counted is a removal under way (every version lowers the
 * count before it clears the entry): the dict as it stands before it,
 * whole.  Fewer than counted cannot be read: an addition whose count is
 * stored before its entry is, or a table being rebuilt (its new keys
 * object filled entry by entry, their number stored last) that
 * rebuilt_whole() did not find finished, which may lack any of its
 * entries. */
static int check_count(const fpi_pyobj *o, uint64_t dict, uint64_t used, size_t live)
{
    int rc = FP_OK;
    if (used != live && used + 1 != live)
        rc = fpi_err(&o->s->err, FP_E_CORRUPT, "dict at 0x%llx: %zu entries, %llu used (caught changing)", U(dict),
                     live, U(used));
    return rc;
}

/* Whether entry index of keys (values: split) is key's, and its value:
 * the one entry read, with the shape and key checked as lookup_at does. */
static int entry_is(const fpi_pyobj *o, uint64_t keys, uint64_t values, size_t index, const char *key,
                    uint64_t *value)
{
    uint64_t at = 0, kk, vv;
    size_t esize = 0, n = 0;
    uint8_t ent[24];
    bool same = false;
    *value = 0;
    int rc = keys_shape(o, keys, values, 0, &at, &esize, &n);
    if (rc || index >= n)
        return rc;
    if ((rc = fpi_read(o->s, at + index * esize, ent, esize)))
        return fpi_err_code(&o->s->err, rc, "cannot read an entry of a dict at 0x%llx", U(at));
    entry_at(ent, esize, NULL, 0, &kk, &vv);
    if (values && (rc = read_word(o, values + (uint64_t)o->values_start + index * 8, &vv, "a dict's value")))
        return rc;
    if (kk && vv && (rc = fpi_pyobj_str_is(o, kk, key, &same)) == FP_OK && same)
        *value = vv;
    return rc;
}

int fpi_pyobj_dict_get(const fpi_pyobj *o, uint64_t dict, const char *key, uint64_t *value)
{
    fpi_dict_hint none = {0};
    return fpi_pyobj_dict_get_hinted(o, dict, key, &none, value);
}

int fpi_pyobj_dict_get_hinted(const fpi_pyobj *o, uint64_t dict, const char *key, fpi_dict_hint *hint,
                              uint64_t *value)
{
    uint64_t keys, values, used;
    size_t index = SIZE_MAX;
    int rc;
    *value = 0;
    if ((rc = read_word(o, dict + (uint64_t)o->dict_keys, &keys, "a dict's keys")) ||
        (rc = read_word(o, dict + (uint64_t)o->dict_values, &values, "a dict's values")) ||
        (rc = read_word(o, dict + (uint64_t)o->dict_used, &used, "a dict's size")))
        return rc;
    if (hint->dict == dict && hint->keys == keys && keys &&
        ((rc = entry_is(o, keys, values, hint->index, key, value)) || *value))
        return rc;
    size_t live = 0;
    if ((rc = lookup_at(o, keys, values, used, key, value, &index, &live)) ||
        (rc = check_count(o, dict, used, live))) {
        *value = 0;
        return rc;
    }
    if (*value)
        *hint = (fpi_dict_hint){.dict = dict, .keys = keys, .index = index};
    return FP_OK;
}

int fpi_pyobj_dict_items(const fpi_pyobj *o, uint64_t dict, uint64_t **pairs, size_t *n)
{
    uint64_t keys, values, used, *vals = NULL;
    uint8_t *ent = NULL;
    size_t esize = 0, count = 0;
    *pairs = NULL;
    *n = 0;
    int rc;
    if ((rc = read_word(o, dict + (uint64_t)o->dict_keys, &keys, "a dict's keys")) ||
        (rc = read_word(o, dict + (uint64_t)o->dict_values, &values, "a dict's values")) ||
        (rc = read_word(o, dict + (uint64_t)o->dict_used, &used, "a dict's size")) ||
        (rc = read_keys(o, keys, values, used, &ent, &esize, &count, &vals)))
        goto out;
    if (count && !(*pairs = malloc(2 * count * sizeof **pairs))) {
        rc = fpi_err(&o->s->err, FP_E_NOMEM, "out of memory: a dict of %zu entries", count);
        goto out;
    }
    for (size_t k = 0; k < count; k++) {
        uint64_t kk, vv;
        entry_at(ent, esize, vals, k, &kk, &vv);
        if (kk && vv) {
            (*pairs)[2 * *n] = kk;
            (*pairs)[2 * *n + 1] = vv;
            (*n)++;
        }
    }
    rc = check_count(o, dict, used, *n);
out:
    free(ent);
    free(vals);
    return rc;
}

int fpi_pyobj_set_items(const fpi_pyobj *o, uint64_t set, uint64_t **items, size_t *n)
{
    const fpi_set_places at = {.used = o->set_used, .mask = o->set_mask, .table = o->set_table};
    return fpi_set_members(o->s, set, &at, FPI_PYOBJ_MAX_ITEMS, true, "a set", items, n);
}

/* n words at addr into a malloc'd array. */
static int read_words(const fpi_pyobj *o, uint64_t addr, uint64_t n, uint64_t **items, const char *what)
{
    *items = NULL;
    if (!n)
        return FP_OK;
    if (!(*items = malloc((size_t)n * sizeof **items)))
        return fpi_err(&o->s->err, FP_E_NOMEM, "out of memory: %s of %llu", what, U(n));
    int rc = fpi_read(o->s, addr, *items, (size_t)n * sizeof **items);
    if (rc) {
        free(*items);
        *items = NULL;
        return fpi_err_code(&o->s->err, rc, "cannot read the items of %s at 0x%llx", what, U(addr));
    }
    for (size_t k = 0; k < n; k++)
        (*items)[k] = fpi_load_u64((const uint8_t *)*items, (int32_t)(k * 8));
    return FP_OK;
}

int fpi_pyobj_tuple_items(const fpi_pyobj *o, uint64_t tuple, uint64_t **items, size_t *n)
{
    uint64_t size;
    *items = NULL;
    *n = 0;
    int rc = read_word(o, tuple + (uint64_t)o->list_size, &size, "a tuple's size");
    if (rc)
        return rc;
    if ((int64_t)size < 0 || size > FPI_PYOBJ_MAX_ITEMS)
        return fpi_err(&o->s->err, (int64_t)size < 0 ? FP_E_CORRUPT : FP_E_LIMIT,
                       "tuple at 0x%llx: %lld items (limit %u)", U(tuple), (long long)size,
                       FPI_PYOBJ_MAX_ITEMS);
    if ((rc = read_words(o, tuple + (uint64_t)o->tuple_items, size, items, "a tuple")))
        return rc;
    *n = (size_t)size;
    return FP_OK;
}

int fpi_pyobj_list_items(const fpi_pyobj *o, uint64_t list, uint64_t **items, size_t *n)
{
    uint64_t size, at;
    *items = NULL;
    *n = 0;
    int rc;
    if ((rc = read_word(o, list + (uint64_t)o->list_size, &size, "a list's size")) ||
        (rc = read_word(o, list + (uint64_t)o->list_items, &at, "a list's items")))
        return rc;
    if ((int64_t)size < 0 || size > FPI_PYOBJ_MAX_ITEMS)
        return fpi_err(&o->s->err, (int64_t)size < 0 ? FP_E_CORRUPT : FP_E_LIMIT,
                       "list at 0x%llx: %lld items (limit %u)", U(list), (long long)size,
                       FPI_PYOBJ_MAX_ITEMS);
    if ((rc = read_words(o, at, size, items, "a list")))
        return rc;
    *n = (size_t)size;
    return FP_OK;
}

int fpi_pyobj_attr(const fpi_pyobj *o, uint64_t obj, uint64_t type, const char *name, uint64_t *value)
{
    uint64_t flags, word, keys;
    int rc;
    *value = 0;
    if ((rc = read_word(o, type + (uint64_t)o->tp_flags, &flags, "a type's flags")))
        return rc;
    bool invalid_values = false;
    if (o->minor >= 13 && (flags & TPFLAGS_INLINE_VALUES)) {
        /* the values right after the object, valid until a dict took them */
        uint64_t size;
        uint8_t head[8];
        if ((rc = read_word(o, type + (uint64_t)o->tp_basicsize, &size, "a type's size")))
            return rc;
        if (size > FPI_MAX_SMALL_STRUCT)
            return fpi_err(&o->s->err, FP_E_CORRUPT, "type 0x%llx: objects of %llu bytes (limit %u)", U(type), U(size),
                           FPI_MAX_SMALL_STRUCT);
        if ((rc = fpi_read(o->s, obj + size, head, sizeof head)))
            return fpi_err_code(&o->s->err, rc, "cannot read the inline values of 0x%llx", U(obj));
        if (head[INLINE_VALID]) {
            if ((rc = read_word(o, type + (uint64_t)o->ht_cached_keys, &keys, "a type's cached keys")))
                return rc;
            return lookup(o, keys, obj + size, name, value);
        }
        invalid_values = true;
    }
    if (flags & TPFLAGS_MANAGED_DICT) {
        if (o->managed_values != FPI_OFF_NONE) { /* 3.11 */
            if ((rc = read_word(o, obj + (uint64_t)(int64_t)o->managed_values, &word, "an object's values")))
                return rc;
            if (word) {
                if ((rc = read_word(o, type + (uint64_t)o->ht_cached_keys, &keys, "a type's cached keys")))
                    return rc;
                return lookup(o, keys, word, name, value);
            }
        }
        if ((rc = read_word(o, obj + (uint64_t)(int64_t)o->managed_dict, &word, "an object's dict")))
            return rc;
        if (o->minor == 12 && (word & 1)) { /* values, tagged */
            if ((rc = read_word(o, type + (uint64_t)o->ht_cached_keys, &keys, "a type's cached keys")))
                return rc;
            return lookup(o, keys, word + 1, name, value);
        }
        /* Values no longer valid and no dict to hold them: the object's
         * attributes are being cleared (a collection's tp_clear, or its
         * deallocation) or its __dict__ replaced — not an instant of them.
         * Seen on 3.14 while a pure-Python asyncio task was collected, the
         * weak reference to it not yet cleared. */
        if (!word && invalid_values)
            return fpi_err(&o->s->err, FP_E_CORRUPT,
                           "object 0x%llx: its inline values cleared and no dict (its attributes caught changing)",
                           U(obj));
        return word ? fpi_pyobj_dict_get(o, word, name, value) : FP_OK;
    }
    uint64_t off;
    if ((rc = read_word(o, type + (uint64_t)o->tp_dictoffset, &off, "a type's dict offset")))
        return rc;
    if ((int64_t)off <= 0 || off > FPI_MAX_SMALL_STRUCT)
        return FP_OK; /* no __dict__ (or one this reader does not follow: var-sized objects) */
    if ((rc = read_word(o, obj + off, &word, "an object's dict")))
        return rc;
    return word ? fpi_pyobj_dict_get(o, word, name, value) : FP_OK;
}

int fpi_pyobj_weakref(const fpi_pyobj *o, uint64_t ref, uint64_t *proven, uint64_t *referent)
{
    uint64_t type;
    bool is = false;
    int rc;
    *referent = 0;
    if ((rc = read_word(o, ref + (uint64_t)o->s->layout.ob_type, &type, "a weak reference's type")))
        return rc;
    if (!type || type != *proven) {
        if ((rc = fpi_pyobj_type_is(o, type, WEAKREF_TYPE, &is)))
            return rc;
        if (!is)
            return fpi_err(&o->s->err, FP_E_CORRUPT, "weak reference 0x%llx: its type is no %s", U(ref),
                           WEAKREF_TYPE);
        *proven = type;
    }
    return read_word(o, ref + (uint64_t)o->wr_object, referent, "a weak reference");
}

int fpi_pyobj_small_int(const fpi_pyobj *o, uint64_t obj, uint64_t *value, bool *ok)
{
    uint8_t b[8 + 4 * LONG_MAX_DIGITS];
    uint64_t ndigits, v = 0;
    *value = 0;
    *ok = false;
    int rc = fpi_read(o->s, obj + (uint64_t)o->hdr, b, sizeof b); /* 3.11 ob_size, 3.12+ lv_tag; the digits */
    if (rc)
        return fpi_err_code(&o->s->err, rc, "cannot read an int at 0x%llx", U(obj));
    uint64_t tag = fpi_load_u64(b, 0);
    if (o->minor == 11) { /* ob_size: the digit count, negative for a negative int */
        if ((int64_t)tag < 0)
            return FP_OK;
        ndigits = tag;
    } else {
        if ((tag & LONG_SIGN_MASK) == 2)
            return FP_OK;
        ndigits = tag >> LONG_NDIGITS_SHIFT;
    }
    if (ndigits > LONG_MAX_DIGITS)
        return FP_OK;
    for (uint64_t i = ndigits; i-- > 0;) {
        uint64_t d = fpi_load_u32(b, (int32_t)(8 + 4 * i)) & ((1u << LONG_DIGIT_BITS) - 1);
        if (v >> (64 - LONG_DIGIT_BITS))
            return FP_OK;
        v = (v << LONG_DIGIT_BITS) | d;
    }
    *value = v;
    *ok = true;
    return FP_OK;
}

int fpi_pyobj_type_name(const fpi_pyobj *o, uint64_t type, char *buf, size_t len)
{
    uint64_t name;
    int rc = read_word(o, type + (uint64_t)o->s->layout.tp_name, &name, "a type's name");
    if (rc)
        return rc;
    memset(buf, 0, len);
    if (fpi_read(o->s, name, buf, len - 1) == FP_OK)
        return FP_OK;
    for (size_t i = 0; i + 1 < len; i++) { /* byte by byte: the name may end at its mapping's end */
        if ((rc = fpi_read(o->s, name + i, buf + i, 1)))
            return fpi_err_code(&o->s->err, rc, "cannot read the name of type 0x%llx", U(type));
        if (!buf[i])
            break;
    }
    return FP_OK;
}

int fpi_pyobj_type_is(const fpi_pyobj *o, uint64_t type, const char *base, bool *out)
{
    uint64_t at = 0;
    int rc = fpi_pyobj_type_base(o, type, base, &at);
    *out = at != 0;
    return rc;
}

int fpi_pyobj_type_base(const fpi_pyobj *o, uint64_t type, const char *base, uint64_t *at)
{
    char name[TYPE_NAME_MAX];
    *at = 0;
    for (int k = 0; type && k < TYPE_BASES_MAX; k++) {
        int rc = fpi_pyobj_type_name(o, type, name, sizeof name);
        if (rc)
            return rc;
        if (strcmp(name, base) == 0) {
            *at = type;
            return FP_OK;
        }
        if ((rc = read_word(o, type + (uint64_t)o->tp_base, &type, "a type's base")))
            return rc;
    }
    return FP_OK;
}
