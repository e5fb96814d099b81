/* locate.h — finding _PyRuntime and the interpreter's layout in a live
 * process from /proc/PID/maps and the mapped ELF files. */
#ifndef FPI_LOCATE_H
#define FPI_LOCATE_H

#include "session.h"

/* On success fills s->layout and s->info (version, runtime address,
 * binary); on failure the message names every strategy tried. */
int fpi_locate_pid(fp_session *s, int pid);

/* Shared by every attach path: given a runtime address and optional
 * version facts, reads and validates the layout into s->layout/s->info. */
int fpi_layout_resolve(fp_session *s, uint64_t runtime, uint32_t hexversion, bool free_threaded,
                      bool debug, fpi_errbuf *why);

/* "3.15.2", "3.14.0b4" */
void fpi_format_version(uint32_t hex, char *buf, size_t len);

#endif
