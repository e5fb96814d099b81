/* versions.h — the CPython versions the library supports (the range itself
 * comes from facts/facts.env through the public frameproof/version.h) and the message that refuses
 * a version outside it. */
#ifndef FPI_VERSIONS_H
#define FPI_VERSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/frameproof.h"
#include "fp_error.h"

#define FPI_PY_MAJOR ((unsigned)FP_PYTHON_MAJOR)
#define FPI_MINOR_OLDEST ((unsigned)FP_PYTHON_OLDEST_MINOR) /* oldest supported 3.x */
#define FPI_MINOR_NEWEST ((unsigned)FP_PYTHON_NEWEST_MINOR) /* newest supported (and tested) 3.x */
#define FPI_MINOR_DEBUG_OFFSETS 13u     /* first 3.x with _Py_DebugOffsets */

static inline unsigned fpi_hex_major(uint32_t hex)
{
    return hex >> 24;
}

static inline unsigned fpi_hex_minor(uint32_t hex)
{
    return (hex >> 16) & 0xffu;
}

/* Is 3.minor newer than the newest supported version (a candidate for
 * fp_options.allow_untested)? */
static inline bool fpi_minor_untested(unsigned major, unsigned minor)
{
    return major == FPI_PY_MAJOR && minor > FPI_MINOR_NEWEST;
}

/* "CPython X.Y: not supported (3.11–3.15 are)", into buf[0..len) or eb;
 * both return FP_E_UNSUPPORTED. */
int fpi_msg_unsupported(char *buf, size_t len, unsigned major, unsigned minor);
int fpi_err_unsupported(fpi_errbuf *eb, unsigned major, unsigned minor);

#endif /* FPI_VERSIONS_H */
