/* maps.h — parsed /proc/PID/maps. */
#ifndef FP_MAPS_H
#define FP_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fp_error.h"

/* Bounds on what we accept from /proc/PID/maps. */
#define FP_MAPS_MAX_ENTRIES 1000000u
#define FP_MAPS_MAX_PATH 4096u

typedef struct fp_mapping {
    uint64_t start, end, offset;
    bool readable, writable, executable;
    bool deleted;        /* path ended in " (deleted)" (suffix removed) */
    char *path;          /* NULL for anonymous mappings */
} fp_mapping;

typedef struct fp_maps {
    fp_mapping *v;
    size_t n;
} fp_maps;

/* Parses maps text (the content of /proc/PID/maps). */
int fpi_maps_parse(const char *text, size_t len, fp_maps *out, fp_errbuf *eb);
int fpi_maps_read_pid(int pid, fp_maps *out, fp_errbuf *eb);
void fpi_maps_free(fp_maps *m);

/* True if [addr, addr+len) lies inside one readable mapping. */
bool fpi_maps_contains(const fp_maps *m, uint64_t addr, uint64_t len);

#endif
