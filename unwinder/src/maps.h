/* maps.h — parsed /proc/PID/maps. */
#ifndef FPI_MAPS_H
#define FPI_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fp_error.h"
#include "fpi_limits.h"

typedef struct fpi_mapping {
    uint64_t start, end, offset;
    bool readable, writable, executable;
    bool deleted;        /* path ended in " (deleted)" (suffix removed) */
    char *path;          /* NULL for anonymous mappings */
} fpi_mapping;

typedef struct fpi_maps {
    fpi_mapping *v;
    size_t n;
} fpi_maps;

/* Parses maps text (the content of /proc/PID/maps). */
int fpi_maps_parse(const char *text, size_t len, fpi_maps *out, fpi_errbuf *eb);
int fpi_maps_read_pid(int pid, fpi_maps *out, fpi_errbuf *eb);
void fpi_maps_free(fpi_maps *m);

/* Opens the file behind mapping m of process pid read-only: through
 * /proc/PID/root (containers, chroots), else /proc/PID/map_files (deleted
 * files).  Returns the descriptor, or -1 with errno set; `used` names the
 * path last tried. */
int fpi_maps_open_file(int pid, const fpi_mapping *m, char *used, size_t usedlen);

/* True if [addr, addr+len) lies inside one readable mapping. */
bool fpi_maps_contains(const fpi_maps *m, uint64_t addr, uint64_t len);

#endif
