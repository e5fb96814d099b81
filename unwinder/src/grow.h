/* grow.h — amortised growth of the library's reusable arrays. */
#ifndef FPI_GROW_H
#define FPI_GROW_H

#include <stddef.h>

/* The growing part of fpi_grow (grow.c): called only when need > *cap. */
void *fpi_grow_more(void *arr, size_t *cap, size_t need, size_t elem, size_t initial);

/* Returns arr grown (doubling, from `initial` elements) so that it holds at
 * least `need` elements of `elem` bytes, updating *cap; NULL when memory
 * runs out, in which case arr and *cap are unchanged.  Inline: the walk
 * asks once per frame, and almost always has room. */
static inline void *fpi_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t initial)
{
    return need <= *cap ? arr : fpi_grow_more(arr, cap, need, elem, initial);
}

#endif
