/* dict_keys.h — PyDictKeysObject as 3.11-3.15 lay it out (the object
 * reader, pyobj.c, reads it; the synthetic tests and fuzzer build it):
 * its header's fields, the kinds of its entry table and the marks of its
 * index, named once. */
#ifndef FPI_DICT_KEYS_H
#define FPI_DICT_KEYS_H

#define FPI_DK_HEADER 32u          /* bytes up to dk_indices */
#define FPI_DK_REFCNT 0            /* Py_ssize_t */
#define FPI_DK_LOG2_SIZE 8         /* uint8: log2 of the index's slots */
#define FPI_DK_LOG2_INDEX_BYTES 9  /* uint8: log2 of the index's bytes */
#define FPI_DK_KIND 10             /* uint8: FPI_DK_KIND_* */
#define FPI_DK_USABLE 16           /* Py_ssize_t: entries that can still be added */
#define FPI_DK_NENTRIES 24         /* Py_ssize_t: entries used, removed ones included */
#define FPI_DK_MAX_LOG2_SIZE 30    /* beyond: not a table any dict has */
#define FPI_DK_KIND_GENERAL 0      /* entries: hash, key, value */
#define FPI_DK_KIND_UNICODE 1      /* entries: key, value */
#define FPI_DK_KIND_SPLIT 2        /* entries: key, unused; values apart */
#define FPI_DK_IX_EMPTY (-1)       /* an index slot never used (all bytes 0xff in every width) */
#define FPI_DK_IX_DUMMY (-2)       /* an index slot whose entry was removed */

#include <stddef.h>

/* The entries a table of 2^log2 slots has room for (CPython's
 * USABLE_FRACTION: two thirds of its slots). */
static inline size_t fpi_dk_room(unsigned log2)
{
    return (((size_t)1 << log2) << 1) / 3;
}

#endif
