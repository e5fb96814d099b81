/* grow.c — amortised growth of the library's reusable arrays. */
#include <stdint.h>
#include <stdlib.h>

#include "grow.h"

void *fpi_grow_more(void *arr, size_t *cap, size_t need, size_t elem, size_t initial)
{
    size_t ncap = *cap ? *cap : (initial ? initial : 1);
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem)
            return NULL;
        ncap *= 2;
    }
    void *na = realloc(arr, ncap * elem);
    if (!na)
        return NULL;
    *cap = ncap;
    return na;
}
