/* linetable_vectors.h — the vector test of the location-table decoder
 * (linetable_vectors.c), one TAP case per interpreter id, run by
 * test_linetable.c. */
#ifndef LINETABLE_VECTORS_H
#define LINETABLE_VECTORS_H

#include <stddef.h>
#include <stdint.h>

#define VEC_MAX_IDS 256u
#define VEC_MAX_ID_LEN 64u
#define VEC_MAX_PATH 4096u

typedef struct vec_totals {
    unsigned interpreters;
    uint64_t code_objects, units;
} vec_totals;

typedef struct vec_case {
    char id[VEC_MAX_ID_LEN];
    char name[VEC_MAX_ID_LEN + 16];
    char corpus[VEC_MAX_PATH];
    vec_totals *totals;
} vec_case;

/* One interpreter's vectors: checks every code unit (state: its vec_case). */
void test_vectors(void **state);
/* Fails, naming the corpus (state) where no vector directory was found. */
void test_vectors_missing(void **state);
/* Lists <corpus>/<id>/ directories into cases, sorted; returns the count or
 * -1 when there are more than cap. */
int list_ids(const char *corpus, vec_case *cases, size_t cap, vec_totals *totals);

#endif
