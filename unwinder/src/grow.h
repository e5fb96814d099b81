/* grow.h — amortised growth of the library's reusable arrays. */
#ifndef FPI_GROW_H
#define FPI_GROW_H

#include <stddef.h>

/* Returns arr grown (doubling, from `initial` elements) so that it holds at
 * least `need` elements of `elem` bytes, updating *cap; NULL when memory
 * runs out, in which case arr and *cap are unchanged. */
void *fpi_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t initial);

#endif
