/* debug_offsets.h — reading and validating a target's _Py_DebugOffsets
 * (CPython 3.13+), the table at the start of _PyRuntime. */
#ifndef FPI_DEBUG_OFFSETS_H
#define FPI_DEBUG_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "fp_error.h"
#include "layout.h"

#define FPI_DEBUG_COOKIE "xdebugpy"
#define FPI_DEBUG_COOKIE_LEN 8
/* Bytes read from the start of _PyRuntime; larger than every known table. */
#define FPI_DEBUG_OFFSETS_READ 8192u

/* Table sizes of the known versions (sizeof(_Py_DebugOffsets)). */
#define FPI_DEBUG_OFFSETS_SIZE_313 584u
#define FPI_DEBUG_OFFSETS_SIZE_314 760u
#define FPI_DEBUG_OFFSETS_SIZE_315 888u

/* Parses and validates a raw table of `len` bytes (untrusted).  Fills every
 * field the table carries into *out, then the built-in extras.  Returns 0,
 * FP_E_NOT_PYTHON (no cookie), FP_E_UNSUPPORTED (version outside 3.13–3.15)
 * or FP_E_CORRUPT (a size or offset out of bounds). */
int fpi_debug_offsets_parse(const uint8_t *table, size_t len, fpi_layout *out, fpi_errbuf *eb);

/* The same; with allow_untested a table newer than the newest supported
 * version is read in the newest version's shape (validated as always) and
 * out->minor is that version's, so built-in knowledge comes from it. */
int fpi_debug_offsets_parse_opt(const uint8_t *table, size_t len, bool allow_untested, fpi_layout *out,
                                fpi_errbuf *eb);

/* Reads the cookie and version only: returns 1 and sets *hexversion if the
 * buffer starts with the cookie, else 0. */
int fpi_debug_offsets_peek(const uint8_t *table, size_t len, uint32_t *hexversion, int *free_threaded);

#endif
