/* image_format.h — the layout of a memory image file, format version 1
 * (.fpimg, docs/image-format.md), shared by its parser (image_open.c) and
 * its writer (image_builder.c): the header's offsets and flags, the sizes
 * of a thread entry and a region header, the largest file the bounds of
 * frameproof/image.h allow, and which state bytes a thread entry may hold.
 * The layout is one of the shared facts (facts/facts.env); its integers are
 * little-endian (little_endian.h) whatever the host. */
#ifndef FPI_IMAGE_FORMAT_H
#define FPI_IMAGE_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "frameproof/image.h"
#include "fp_facts.h"
#include "little_endian.h"

/* Fixed header (all integers little-endian). */
#define FPI_IMG_MAGIC ((const char[FPI_IMG_MAGIC_LEN]){FP_FACT_FPIMG_MAGIC}) /* NUL-padded */
#define FPI_IMG_MAGIC_LEN FP_FACT_FPIMG_MAGIC_LEN
#define FPI_IMG_OFF_FORMAT FP_FACT_FPIMG_OFF_FORMAT
#define FPI_IMG_OFF_HEADER_SIZE FP_FACT_FPIMG_OFF_HEADER_SIZE
#define FPI_IMG_OFF_FLAGS FP_FACT_FPIMG_OFF_FLAGS
#define FPI_IMG_OFF_HEXVERSION FP_FACT_FPIMG_OFF_HEXVERSION
#define FPI_IMG_OFF_PID FP_FACT_FPIMG_OFF_PID
#define FPI_IMG_OFF_THREAD_COUNT FP_FACT_FPIMG_OFF_THREAD_COUNT
#define FPI_IMG_OFF_RUNTIME FP_FACT_FPIMG_OFF_RUNTIME
#define FPI_IMG_OFF_REGION_COUNT FP_FACT_FPIMG_OFF_REGION_COUNT
#define FPI_IMG_OFF_PYVERSION FP_FACT_FPIMG_OFF_PYVERSION
#define FPI_IMG_V1_HEADER_SIZE FP_FACT_FPIMG_HEADER_SIZE
/* The appended field: asyncio's table address, in headers of at least
 * FPI_IMG_ASYNCIO_HEADER_SIZE bytes (absent: 0, no task graph recorded). */
#define FPI_IMG_OFF_ASYNCIO FP_FACT_FPIMG_OFF_ASYNCIO
#define FPI_IMG_ASYNCIO_HEADER_SIZE FP_FACT_FPIMG_ASYNCIO_HEADER_SIZE
/* Room for fields a later minor revision may append to the header. */
#define FPI_IMG_MAX_HEADER_SIZE FP_FACT_FPIMG_MAX_HEADER_SIZE
/* Smallest prefix that tells the magic, format version and header size. */
#define FPI_IMG_PREAMBLE (FP_FACT_FPIMG_OFF_HEADER_SIZE + 4u)

#define FPI_IMG_FLAG_FREE_THREADED FP_FACT_FPIMG_FLAG_FREE_THREADED
#define FPI_IMG_FLAG_DEBUG FP_FACT_FPIMG_FLAG_DEBUG
#define FPI_IMG_KNOWN_FLAGS (FPI_IMG_FLAG_FREE_THREADED | FPI_IMG_FLAG_DEBUG)

/* Thread entry: u64 native id, u8 state, 7 zero bytes. */
#define FPI_IMG_THREAD_ENTRY FP_FACT_FPIMG_THREAD_ENTRY
#define FPI_IMG_THREAD_OFF_STATE FP_FACT_FPIMG_THREAD_OFF_STATE
/* Region header: u64 address, u64 length; the bytes follow. */
#define FPI_IMG_REGION_HEADER FP_FACT_FPIMG_REGION_HEADER

/* The public API states the same facts. */
_Static_assert(FP_IMAGE_FORMAT_VERSION == FP_FACT_FPIMG_FORMAT_VERSION, "image format version");
_Static_assert(FP_IMAGE_VERSION_LEN == FP_FACT_FPIMG_PYVERSION_LEN, "image version field size");
_Static_assert(FP_FACT_FPIMG_OFF_PYVERSION + FP_FACT_FPIMG_PYVERSION_LEN == FP_FACT_FPIMG_HEADER_SIZE,
               "the version string field ends the version 1 header");
_Static_assert(FP_FACT_FPIMG_OFF_ASYNCIO == FP_FACT_FPIMG_HEADER_SIZE &&
                   FP_FACT_FPIMG_ASYNCIO_HEADER_SIZE == FP_FACT_FPIMG_OFF_ASYNCIO + 8,
               "asyncio's table address is the one field appended to the version 1 header");

/* Largest file fp_image_open accepts. */
#define FPI_IMG_MAX_FILE_SIZE                                                                    \
    ((uint64_t)FPI_IMG_MAX_HEADER_SIZE + (uint64_t)FP_IMAGE_MAX_THREADS * FPI_IMG_THREAD_ENTRY + \
     (uint64_t)FP_IMAGE_MAX_REGIONS * FPI_IMG_REGION_HEADER + FP_IMAGE_MAX_BYTES)

/* A thread's state byte: 0 (unknown) or a scheduler state letter. */
static inline bool fpi_img_valid_state(uint8_t c)
{
    return c == 0 || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

#endif
