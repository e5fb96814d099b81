/* pyset.h — a set's members read from the target: the one reader of
 * PySetObject's table, for 3.11-3.13's object readers (pyobj.h) and 3.14+'s
 * awaited_by sets (async_graph.c), each with its own places and bound.
 * The target must not change meanwhile (stopped, or an image). */
#ifndef FPI_PYSET_H
#define FPI_PYSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session.h"

/* Where a PySetObject keeps its used count, mask and table. */
typedef struct fpi_set_places {
    int32_t used, mask, table;
} fpi_set_places;

/* Every member of the set at set: *items malloc'd (NULL when none), *n of
 * them.  Its shape is checked before the table is read (slots, mask + 1, a
 * power of two, at most max_slots; used no more than them) and the members
 * found must be `used`.  With in_flight, a set read in a target stopped
 * while one of its threads removes a member or adds one in place of a
 * removed one is taken as it stands before that change completes: one
 * member fewer than `used`, or an entry holding the dummy key (the key of
 * a settled removed entry, hash -1) with another hash (a removal between
 * its two stores), left out — only where a removed entry shows the dummy.
 * A table being rebuilt (a resize: every member moved to a new table,
 * which holds no removed entry) is never taken short.  Errors:
 * FP_E_LIMIT (more slots than max_slots), FP_E_CORRUPT, FP_E_NOMEM, the
 * read's; messages name it as what ("a set", "asyncio awaited_by set"). */
int fpi_set_members(fp_session *s, uint64_t set, const fpi_set_places *at, uint64_t max_slots, bool in_flight,
                    const char *what, uint64_t **items, size_t *n);

#endif
