/* export.h — FP_API, the mark on every function of the public API.
 *
 * The library is built with hidden symbol visibility: only declarations
 * marked FP_API are exported from the shared library.  Everything else is
 * internal: functions and types named fpi_*, macros FPI_* (enforced by
 * tests/unit/check_exports.py). */
#ifndef FRAMEPROOF_EXPORT_H
#define FRAMEPROOF_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define FP_API __attribute__((visibility("default")))
#else
#define FP_API
#endif

#endif /* FRAMEPROOF_EXPORT_H */
