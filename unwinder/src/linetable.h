/* linetable.h — decoder for the CPython 3.11+ location table (co_linetable).
 *
 * Pure functions over a copied byte buffer: no reads from the target, no
 * allocation.  Positions follow code.co_positions() exactly: 1-based lines,
 * 0-based UTF-8 byte columns, FP_POS_NONE where co_positions() gives None.
 */
#ifndef FPI_LINETABLE_H
#define FPI_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

#include "fpi_limits.h"

typedef struct fpi_position {
    int32_t line, end_line, column, end_column; /* FP_POS_NONE (-1) when absent */
} fpi_position;

/* One decoded entry: code units [start, start + length). */
typedef struct fpi_linetable_entry {
    uint32_t start;
    uint32_t length; /* 1..8 */
    fpi_position pos;
} fpi_linetable_entry;

typedef struct fpi_linetable_iter {
    const uint8_t *table;
    size_t len;
    size_t pos;          /* byte position of the next entry */
    int64_t line;        /* running line number */
    uint32_t unit;       /* start unit of the next entry */
} fpi_linetable_iter;

void fpi_linetable_iter_init(fpi_linetable_iter *it, const uint8_t *table,
                            size_t len, int32_t firstlineno);

/* Returns 1 and fills *e for the next entry, 0 at the end of the table, or
 * FP_E_CORRUPT for a malformed table (truncated entry, continuation byte
 * where an entry should start, varint overflow, line out of int32 range). */
int fpi_linetable_next(fpi_linetable_iter *it, fpi_linetable_entry *e);

/* Position of code unit `unit`.  Returns 0 (a unit past the end of the
 * table gets all-FP_POS_NONE), or FP_E_CORRUPT if the table is malformed
 * before the entry covering `unit`. */
int fpi_linetable_lookup(const uint8_t *table, size_t len, int32_t firstlineno,
                        uint32_t unit, fpi_position *out);

#endif /* FPI_LINETABLE_H */
