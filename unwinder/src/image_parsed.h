/* image_parsed.h — struct fp_image, a parsed and validated memory image:
 * filled by its parser (image_open.c), read by the reader over it and its
 * accessors (reader_image.c). */
#ifndef FPI_IMAGE_PARSED_H
#define FPI_IMAGE_PARSED_H

#include <stddef.h>
#include <stdint.h>

#include "frameproof/image.h"

/* One region: len (> 0) bytes at addr, pointing into the image's buffer.
 * Regions are sorted by address and do not overlap. */
typedef struct fpi_img_region {
    uint64_t addr;
    uint64_t len;
    const uint8_t *data;
} fpi_img_region;

struct fp_image {
    uint8_t *buf; /* the whole file, owned */
    size_t len;
    fp_image_meta meta;
    fp_image_thread *threads;
    size_t nthreads;
    fpi_img_region *regions;
    size_t nregions;
    uint64_t region_bytes;
};

#endif
