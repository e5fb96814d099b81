/* pyset.c — a set's members (pyset.h): PySetObject's table of (key, hash)
 * entries, an empty slot's key NULL, a deleted one's hash -1 (no live key
 * hashes to -1), in every version 3.11-3.15. */
#include <stdlib.h>

#include "pyset.h"
#include "read.h"
#include "typed_load.h"

#define U(x) ((unsigned long long)(x))
#define SET_ENTRY 16u              /* setentry: key, hash */
#define SET_DUMMY_HASH ((uint64_t)-1)

static int read_word(fp_session *s, uint64_t addr, uint64_t *out, const char *what)
{
    uint8_t b[8];
    *out = 0;
    int rc = fpi_read(s, addr, b, sizeof b);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read %s at 0x%llx", what, U(addr));
    *out = fpi_load_u64(b, 0);
    return FP_OK;
}

int fpi_set_members(fp_session *s, uint64_t set, const fpi_set_places *at, uint64_t max_slots, bool in_flight,
                    const char *what, uint64_t **items, size_t *n)
{
    uint64_t used, mask, table;
    uint8_t *ent = NULL;
    *items = NULL;
    *n = 0;
    int rc;
    if ((rc = read_word(s, set + (uint64_t)at->used, &used, "a set's size")) ||
        (rc = read_word(s, set + (uint64_t)at->mask, &mask, "a set's mask")) ||
        (rc = read_word(s, set + (uint64_t)at->table, &table, "a set's table")))
        return rc;
    bool shaped = !(mask & (mask + 1));
    if (!shaped || mask >= max_slots || used > mask + 1)
        return fpi_err(&s->err, shaped && mask >= max_slots ? FP_E_LIMIT : FP_E_CORRUPT,
                       "%s at 0x%llx: mask %llu with %llu used, invalid or too large (limit %llu slots)", what, U(set),
                       U(mask), U(used), U(max_slots));
    size_t len = (size_t)(mask + 1) * SET_ENTRY, most = (size_t)used;
    if (!(ent = malloc(len)) || (most && !(*items = malloc(most * sizeof **items)))) {
        rc = fpi_err(&s->err, FP_E_NOMEM, "out of memory: %s of %llu", what, U(used));
        goto out;
    }
    if ((rc = fpi_read(s, table, ent, len))) {
        rc = fpi_err_code(&s->err, rc, "cannot read the table of %s at 0x%llx", what, U(set));
        goto out;
    }
    /* A deleted entry's key is the set type's one dummy object: where one
     * is settled (its hash -1), an entry holding it with another hash is
     * a removal caught between its two stores. */
    uint64_t dummy = 0;
    for (size_t k = 0; in_flight && !dummy && k <= mask; k++)
        if (fpi_load_u64(ent, (int32_t)(k * SET_ENTRY + 8)) == SET_DUMMY_HASH)
            dummy = fpi_load_u64(ent, (int32_t)(k * SET_ENTRY));
    size_t halfway = 0;
    for (size_t k = 0; k <= mask; k++) {
        uint64_t key = fpi_load_u64(ent, (int32_t)(k * SET_ENTRY));
        if (!key || fpi_load_u64(ent, (int32_t)(k * SET_ENTRY + 8)) == SET_DUMMY_HASH)
            continue;
        if (dummy && key == dummy) {
            halfway++;
            continue;
        }
        if (*n == most) {
            rc = fpi_err(&s->err, FP_E_CORRUPT, "%s at 0x%llx: more entries than its %llu used", what, U(set),
                         U(used));
            goto out;
        }
        (*items)[(*n)++] = key;
    }
    if (halfway > 1 || (*n != used && !(dummy && *n + 1 == used)))
        rc = fpi_err(&s->err, FP_E_CORRUPT, "%s at 0x%llx: %zu entries, %llu used", what, U(set), *n, U(used));
out:
    free(ent);
    if (rc) {
        free(*items);
        *items = NULL;
        *n = 0;
    }
    return rc;
}
