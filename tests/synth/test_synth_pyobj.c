/* test_synth_pyobj.c — 3.11-3.15's dict lookups by str key (pyobj.h) in
 * synthetic images of every such layout: a full lookup finds its key and
 * leaves a hint; the hinted lookup reads less and gives what a full one
 * would when the dict changed since — the key moved to another entry, the
 * hinted entry's key replaced by another str at the same place, its value
 * replaced, the keys object replaced.  A set's members (pyset.h): exact
 * by its count, or one short of it while a removal is under way (never
 * while the table is being rebuilt).  A dict's entries (pyobj.h): exact by
 * its count, or the read fails (a dict caught being rebuilt) — except a
 * rebuilt table published before its entry count, whose index names every
 * counted entry once: read whole. */
#include "synth_fixture.h"
#include "synth_tests.h"
#include "dict_keys.h"
#include "pyobj.h"
#include "pyset.h"
#include "synth_image.h"

static const char *const PYOBJ_LAYOUTS[] = {"3.11", "3.12", "3.13", "3.13t", "3.14", "3.14t", "3.15", "3.15t"};

#define KEYS_LOG2 3                    /* 8 slots, 1-byte indices */
#define KEYS_ENTRIES (FPI_DK_HEADER + 8u) /* the header, then the indices (one byte each) */
#define ENTRY 16u                      /* a str-keyed table's entry: key, value */
#define WANT "asyncio.tasks"
#define WANT_AT 4u                     /* the entry holding WANT */
#define NENTRIES 5u

/* A str-keyed keys object of NENTRIES entries, WANT at WANT_AT, value of
 * entry k 0x5000 + k. */
static uint64_t make_keys(synth_image *img)
{
    static const char *const names[] = {"sys", "os", "asyncio", "asyncio.events", WANT};
    uint64_t keys = synth_alloc(img, KEYS_ENTRIES + (1u << KEYS_LOG2) * ENTRY);
    assert_true(keys != 0);
    uint8_t *h = synth_bytes(img, keys, KEYS_ENTRIES);
    h[FPI_DK_REFCNT] = 1;
    h[FPI_DK_LOG2_SIZE] = KEYS_LOG2;
    h[FPI_DK_LOG2_INDEX_BYTES] = KEYS_LOG2; /* one byte per slot */
    h[FPI_DK_KIND] = FPI_DK_KIND_UNICODE;
    h[FPI_DK_NENTRIES] = NENTRIES;
    memset(h + FPI_DK_HEADER, 0xff, 1u << KEYS_LOG2); /* FPI_DK_IX_EMPTY */
    for (uint64_t k = 0; k < NENTRIES; k++) {
        uint64_t key = synth_str_object(img, names[k], false);
        assert_true(key != 0);
        h[FPI_DK_HEADER + k] = (uint8_t)k;
        synth_put64(img, keys + KEYS_ENTRIES + k * ENTRY, key);
        synth_put64(img, keys + KEYS_ENTRIES + k * ENTRY + 8, 0x5000 + k);
    }
    return keys;
}

/* b: a scene of layout id built; o: its object reader (3.11-3.15). */
static void pyobj_scene(const char *id, built *b, fpi_pyobj *o)
{
    scene sc;
    build_scene(id, 0, &sc, b);
    assert_true(fpi_pyobj_init(o, b->s));
}

static uint64_t lookups_reads(fp_session *s, const fpi_pyobj *o, uint64_t dict, fpi_dict_hint *hint,
                              uint64_t *value)
{
    uint64_t before = s->reads.calls;
    int rc = fpi_pyobj_dict_get_hinted(o, dict, WANT, hint, value);
    if (rc)
        fail_msg("lookup: %s", fp_session_get_errmsg(s));
    return s->reads.calls - before;
}

void test_dict_lookup_hint(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof PYOBJ_LAYOUTS / sizeof *PYOBJ_LAYOUTS; i++) {
        const char *id = PYOBJ_LAYOUTS[i];
        built b;
        fpi_pyobj o;
        pyobj_scene(id, &b, &o);
        uint64_t keys = make_keys(b.img), dict = synth_alloc(b.img, 64), v = 0;
        assert_true(dict != 0);
        synth_put64(b.img, dict + (uint64_t)o.dict_keys, keys);
        synth_put64(b.img, dict + (uint64_t)o.dict_used, NENTRIES);
        uint64_t entry = keys + KEYS_ENTRIES + WANT_AT * ENTRY;

        /* a full lookup: found, hinted */
        fpi_dict_hint hint = {0};
        uint64_t full = lookups_reads(b.s, &o, dict, &hint, &v);
        assert_int_equal(v, 0x5000 + WANT_AT);
        assert_int_equal(hint.dict, dict);
        assert_int_equal(hint.keys, keys);
        assert_int_equal(hint.index, WANT_AT);
        /* hinted: the same value for fewer reads than a full lookup */
        uint64_t hinted = lookups_reads(b.s, &o, dict, &hint, &v);
        assert_int_equal(v, 0x5000 + WANT_AT);
        if (hinted >= full)
            fail_msg("%s: a hinted lookup read %llu times, a full one %llu", id, (unsigned long long)hinted,
                     (unsigned long long)full);

        /* the hinted entry's value replaced: the new one */
        synth_put64(b.img, entry + 8, 0x6000);
        lookups_reads(b.s, &o, dict, &hint, &v);
        assert_int_equal(v, 0x6000);

        /* another str at the hinted entry (same length, another key): not
         * WANT's value, and WANT found nowhere */
        uint64_t other = synth_str_object(b.img, "asyncio.taskz", false);
        uint64_t want_key = 0;
        memcpy(&want_key, synth_bytes(b.img, entry, 8), 8);
        synth_put64(b.img, entry, other);
        lookups_reads(b.s, &o, dict, &hint, &v);
        assert_int_equal(v, 0);

        /* WANT deleted there (key and value cleared) and added again as a
         * new entry: found there, the hint moved */
        synth_put64(b.img, entry, 0);
        synth_put64(b.img, entry + 8, 0);
        synth_put64(b.img, keys + KEYS_ENTRIES + NENTRIES * ENTRY, want_key);
        synth_put64(b.img, keys + KEYS_ENTRIES + NENTRIES * ENTRY + 8, 0x7000);
        synth_bytes(b.img, keys, KEYS_ENTRIES)[24] = NENTRIES + 1;
        lookups_reads(b.s, &o, dict, &hint, &v);
        assert_int_equal(v, 0x7000);
        assert_int_equal(hint.index, NENTRIES);

        /* the dict given a new keys object: looked up there */
        uint64_t keys2 = make_keys(b.img);
        synth_put64(b.img, dict + (uint64_t)o.dict_keys, keys2);
        lookups_reads(b.s, &o, dict, &hint, &v);
        assert_int_equal(v, 0x5000 + WANT_AT);
        assert_int_equal(hint.keys, keys2);

        /* a dict caught being rebuilt (its new keys object filled, its
         * entry count not stored yet): its count says so, the read fails */
        synth_bytes(b.img, keys2, KEYS_ENTRIES)[24] = WANT_AT - 1;
        fpi_dict_hint none = {0};
        assert_int_equal(fpi_pyobj_dict_get_hinted(&o, dict, WANT, &none, &v), FP_E_CORRUPT);
        assert_int_equal(v, 0);
        uint64_t *pairs = NULL;
        size_t npairs = 0;
        assert_int_equal(fpi_pyobj_dict_items(&o, dict, &pairs, &npairs), FP_E_CORRUPT);
        free(pairs);
        synth_bytes(b.img, keys2, KEYS_ENTRIES)[24] = NENTRIES;
        assert_int_equal(fpi_pyobj_dict_items(&o, dict, &pairs, &npairs), FP_OK);
        assert_int_equal(npairs, NENTRIES);
        free(pairs);
        /* a removal under way (counted one less, its entry not cleared
         * yet): the dict as before it; two less: refused */
        synth_put64(b.img, dict + (uint64_t)o.dict_used, NENTRIES - 1);
        assert_int_equal(fpi_pyobj_dict_items(&o, dict, &pairs, &npairs), FP_OK);
        assert_int_equal(npairs, NENTRIES);
        free(pairs);
        synth_put64(b.img, dict + (uint64_t)o.dict_used, NENTRIES - 2);
        assert_int_equal(fpi_pyobj_dict_items(&o, dict, &pairs, &npairs), FP_E_CORRUPT);
        free(pairs);
        unbuild(&b);
    }
}

#define ROOM 5u  /* USABLE_FRACTION of 8 slots: a new table's dk_usable */

/* The pairs read from dict, or the error. */
static int items_of(const fpi_pyobj *o, uint64_t dict, size_t *n)
{
    uint64_t *pairs = NULL;
    int rc = fpi_pyobj_dict_items(o, dict, &pairs, n);
    free(pairs);
    return rc;
}

void test_dict_rebuilt(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof PYOBJ_LAYOUTS / sizeof *PYOBJ_LAYOUTS; i++) {
        built b;
        fpi_pyobj o;
        pyobj_scene(PYOBJ_LAYOUTS[i], &b, &o);
        /* a table rebuilt for NENTRIES entries (dictresize: entries copied,
         * index built, the keys object published), its entry count and
         * usable room not stored yet */
        uint64_t keys = make_keys(b.img), dict = synth_alloc(b.img, 64), v = 0;
        assert_true(dict != 0);
        uint8_t *h = synth_bytes(b.img, keys, KEYS_ENTRIES);
        h[FPI_DK_USABLE] = ROOM;
        h[FPI_DK_NENTRIES] = 0;
        synth_put64(b.img, dict + (uint64_t)o.dict_keys, keys);
        synth_put64(b.img, dict + (uint64_t)o.dict_used, NENTRIES);
        size_t n = 0;
        assert_int_equal(items_of(&o, dict, &n), FP_OK);
        assert_int_equal(n, NENTRIES);
        fpi_dict_hint hint = {0};
        assert_int_equal(fpi_pyobj_dict_get_hinted(&o, dict, WANT, &hint, &v), FP_OK);
        assert_int_equal(v, 0x5000 + WANT_AT);
        /* the index not built to its end (the last slot still empty): refused */
        h[FPI_DK_HEADER + NENTRIES - 1] = 0xff;
        assert_int_equal(items_of(&o, dict, &n), FP_E_CORRUPT);
        hint = (fpi_dict_hint){0};
        assert_int_equal(fpi_pyobj_dict_get_hinted(&o, dict, WANT, &hint, &v), FP_E_CORRUPT);
        /* an entry named twice, or a removed slot: no finished rebuild */
        h[FPI_DK_HEADER + NENTRIES - 1] = 0;
        assert_int_equal(items_of(&o, dict, &n), FP_E_CORRUPT);
        h[FPI_DK_HEADER + NENTRIES - 1] = 0xfe;
        assert_int_equal(items_of(&o, dict, &n), FP_E_CORRUPT);
        h[FPI_DK_HEADER + NENTRIES - 1] = NENTRIES - 1;
        /* its room already lowered (not a table just published), or more
         * counted than it has room for: refused */
        h[FPI_DK_USABLE] = ROOM - 1;
        assert_int_equal(items_of(&o, dict, &n), FP_E_CORRUPT);
        h[FPI_DK_USABLE] = ROOM;
        synth_put64(b.img, dict + (uint64_t)o.dict_used, ROOM + 1);
        assert_int_equal(items_of(&o, dict, &n), FP_E_CORRUPT);
        /* counted fewer than its index names: refused */
        synth_put64(b.img, dict + (uint64_t)o.dict_used, NENTRIES - 1);
        assert_int_equal(items_of(&o, dict, &n), FP_E_CORRUPT);
        synth_put64(b.img, dict + (uint64_t)o.dict_used, NENTRIES);
        assert_int_equal(items_of(&o, dict, &n), FP_OK);
        /* a header claiming a table too large to read while rebuilt (2^23
         * slots, room untouched): refused without reading its index */
        h[FPI_DK_LOG2_SIZE] = h[FPI_DK_LOG2_INDEX_BYTES] = 23;
        synth_put64(b.img, keys + FPI_DK_USABLE, ((uint64_t)1 << 24) / 3);
        assert_int_equal(items_of(&o, dict, &n), FP_E_CORRUPT);
        unbuild(&b);
    }
}

/* A weak reference's type is checked by name once per read: a reference
 * of the type proven before is taken without it (fewer reads), any other
 * type is checked, and one that is no weakref.ReferenceType refused. */
void test_weakref_type_proven(void **state)
{
    (void)state;
    built b;
    fpi_pyobj o;
    pyobj_scene("3.13", &b, &o);
    const int32_t ob_type = b.s->layout.ob_type;
    uint64_t wr_type = synth_type_object(b.img, "weakref.ReferenceType");
    uint64_t other_type = synth_type_object(b.img, "set");
    uint64_t ref1 = synth_alloc(b.img, 64), ref2 = synth_alloc(b.img, 64), odd = synth_alloc(b.img, 64);
    assert_true(wr_type && other_type && ref1 && ref2 && odd);
    synth_put64(b.img, ref1 + (uint64_t)ob_type, wr_type);
    synth_put64(b.img, ref1 + (uint64_t)o.wr_object, 0x7001);
    synth_put64(b.img, ref2 + (uint64_t)ob_type, wr_type);
    synth_put64(b.img, ref2 + (uint64_t)o.wr_object, 0x7002);
    synth_put64(b.img, odd + (uint64_t)ob_type, other_type);
    uint64_t proven = 0, v = 0, before = b.s->reads.calls;
    assert_int_equal(fpi_pyobj_weakref(&o, ref1, &proven, &v), FP_OK);
    assert_int_equal(v, 0x7001);
    assert_int_equal(proven, wr_type);
    uint64_t first = b.s->reads.calls - before;
    before = b.s->reads.calls;
    assert_int_equal(fpi_pyobj_weakref(&o, ref2, &proven, &v), FP_OK);
    assert_int_equal(v, 0x7002);
    if (b.s->reads.calls - before >= first)
        fail_msg("a reference of the proven type read %llu times, the first %llu",
                 (unsigned long long)(b.s->reads.calls - before), (unsigned long long)first);
    assert_int_equal(fpi_pyobj_weakref(&o, odd, &proven, &v), FP_E_CORRUPT);
    assert_int_equal(proven, wr_type);
    uint64_t none = 0;
    assert_int_equal(fpi_pyobj_weakref(&o, odd, &none, &v), FP_E_CORRUPT);
    assert_int_equal(none, 0);
    unbuild(&b);
}

#define DUMMY 0x9005u  /* the set type's dummy key, as a removed entry holds it */

/* A set of 8 slots holding 0x9001 and 0x9003, its count `used`; with
 * removed, a removed entry (DUMMY, hash -1); with halfway, an entry being
 * removed (DUMMY, its old hash): its members, or the error. */
static int set_read(built *b, const fpi_pyobj *o, uint64_t used, bool removed, bool halfway, bool in_flight,
                    uint64_t **items, size_t *n)
{
    uint64_t set = synth_alloc(b->img, 64), table = synth_alloc(b->img, 8 * 16);
    assert_true(set && table);
    synth_put64(b->img, set + (uint64_t)o->set_used, used);
    synth_put64(b->img, set + (uint64_t)o->set_mask, 7);
    synth_put64(b->img, set + (uint64_t)o->set_table, table);
    synth_put64(b->img, table + 1 * 16, 0x9001);
    synth_put64(b->img, table + 1 * 16 + 8, 11);
    synth_put64(b->img, table + 3 * 16, 0x9003);
    synth_put64(b->img, table + 3 * 16 + 8, 13);
    if (removed) {
        synth_put64(b->img, table + 5 * 16, DUMMY);
        synth_put64(b->img, table + 5 * 16 + 8, UINT64_MAX);
    }
    if (halfway) {
        synth_put64(b->img, table + 6 * 16, DUMMY);
        synth_put64(b->img, table + 6 * 16 + 8, 17);
    }
    const fpi_set_places at = {.used = o->set_used, .mask = o->set_mask, .table = o->set_table};
    return fpi_set_members(b->s, set, &at, 1u << 10, in_flight, "a set", items, n);
}

void test_set_in_flight(void **state)
{
    (void)state;
    built b;
    fpi_pyobj o;
    pyobj_scene("3.12", &b, &o);
    uint64_t *items = NULL;
    size_t n = 0;
    /* exact: the two members, in table order */
    assert_int_equal(set_read(&b, &o, 2, true, false, false, &items, &n), FP_OK);
    assert_int_equal(n, 2);
    assert_int_equal(items[0], 0x9001);
    assert_int_equal(items[1], 0x9003);
    free(items);
    /* one more counted than found, where a removed entry shows the dummy:
     * a removal's entry cleared, its count not yet (or an addition's count
     * stored, its entry not yet): taken only with in_flight */
    assert_int_equal(set_read(&b, &o, 3, true, false, false, &items, &n), FP_E_CORRUPT);
    assert_null(items);
    assert_int_equal(set_read(&b, &o, 3, true, false, true, &items, &n), FP_OK);
    assert_int_equal(n, 2);
    free(items);
    /* a removal between its two stores (the dummy key, the old hash): left out */
    assert_int_equal(set_read(&b, &o, 3, true, true, true, &items, &n), FP_OK);
    assert_int_equal(n, 2);
    assert_int_equal(items[1], 0x9003);
    free(items);
    /* ... which a strict read takes as a member (its callers check what a
     * member is) */
    assert_int_equal(set_read(&b, &o, 3, true, true, false, &items, &n), FP_OK);
    assert_int_equal(n, 3);
    assert_int_equal(items[2], DUMMY);
    free(items);
    /* no removed entry: a table being rebuilt (a resize), one member not
     * moved yet: never taken short */
    assert_int_equal(set_read(&b, &o, 3, false, false, true, &items, &n), FP_E_CORRUPT);
    /* one fewer counted than found, two apart: no single change explains them */
    assert_int_equal(set_read(&b, &o, 1, true, false, true, &items, &n), FP_E_CORRUPT);
    assert_int_equal(set_read(&b, &o, 4, true, false, true, &items, &n), FP_E_CORRUPT);
    assert_null(items);
    unbuild(&b);
}

#define TP_INLINE_VALUES (1u << 2)  /* Py_TPFLAGS_INLINE_VALUES (3.13+) */
#define TP_MANAGED_DICT (1u << 4)   /* Py_TPFLAGS_MANAGED_DICT */
#define HEAP_TYPE_BYTES 1024u       /* past every layout's ht_cached_keys */
#define PRE_HEADER 32u              /* room before an object for its managed dict */

/* An instance attribute of a type whose values are inline (3.13+): read
 * from the values while they are valid, from the dict once one took them;
 * with neither (the values invalid, no dict: the object's attributes being
 * cleared, as a collection left a pure-Python asyncio task on 3.14 while a
 * weak reference still named it) the read fails, where it gave "no such
 * attribute".  A type without inline values whose dict is not made yet
 * has no attribute. */
void test_inline_values_cleared(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof PYOBJ_LAYOUTS / sizeof *PYOBJ_LAYOUTS; i++) {
        built b;
        fpi_pyobj o;
        pyobj_scene(PYOBJ_LAYOUTS[i], &b, &o);
        if (o.minor < 13) {
            unbuild(&b);
            continue;
        }
        const int32_t ob_type = b.s->layout.ob_type;
        uint64_t type = synth_alloc(b.img, HEAP_TYPE_BYTES), keys = make_keys(b.img);
        uint64_t block = synth_alloc(b.img, PRE_HEADER + (uint64_t)o.hdr + 8u + NENTRIES * 8u);
        uint64_t dict = synth_alloc(b.img, 64), obj = block + PRE_HEADER, values = obj + (uint64_t)o.hdr, v = 0;
        assert_true(type && keys && block && dict);
        synth_bytes(b.img, keys, KEYS_ENTRIES)[FPI_DK_KIND] = FPI_DK_KIND_SPLIT;
        synth_put64(b.img, type + (uint64_t)o.tp_flags, TP_INLINE_VALUES | TP_MANAGED_DICT);
        synth_put64(b.img, type + (uint64_t)o.tp_basicsize, (uint64_t)o.hdr);
        synth_put64(b.img, type + (uint64_t)o.ht_cached_keys, keys);
        synth_put64(b.img, obj + (uint64_t)ob_type, type);
        uint8_t *head = synth_bytes(b.img, values, 8);
        head[0] = head[1] = NENTRIES; /* capacity, size, embedded, valid */
        head[2] = head[3] = 1;
        synth_put64(b.img, values + (uint64_t)o.values_start + WANT_AT * 8u, 0x6000 + WANT_AT);
        assert_int_equal(fpi_pyobj_attr(&o, obj, type, WANT, &v), FP_OK);
        assert_int_equal(v, 0x6000 + WANT_AT);
        /* a dict took the values: read there */
        uint64_t dkeys = make_keys(b.img);
        assert_true(dkeys != 0);
        synth_put64(b.img, dict + (uint64_t)o.dict_keys, dkeys);
        synth_put64(b.img, dict + (uint64_t)o.dict_used, NENTRIES);
        synth_put64(b.img, obj + (uint64_t)(int64_t)o.managed_dict, dict);
        head = synth_bytes(b.img, values, 8);
        head[3] = 0;
        assert_int_equal(fpi_pyobj_attr(&o, obj, type, WANT, &v), FP_OK);
        assert_int_equal(v, 0x5000 + WANT_AT);
        /* values invalid, no dict: caught being cleared */
        synth_put64(b.img, obj + (uint64_t)(int64_t)o.managed_dict, 0);
        assert_int_equal(fpi_pyobj_attr(&o, obj, type, WANT, &v), FP_E_CORRUPT);
        assert_int_equal(v, 0);
        /* no inline values, no dict yet: no attribute */
        synth_put64(b.img, type + (uint64_t)o.tp_flags, TP_MANAGED_DICT);
        assert_int_equal(fpi_pyobj_attr(&o, obj, type, WANT, &v), FP_OK);
        assert_int_equal(v, 0);
        unbuild(&b);
    }
}
