/* frameproof/image.h — memory images (.fpimg, docs/image-format.md): the
 * memory a sample of a target read and the facts needed to attach to it.
 *   - fp_image: a parsed, validated image and a reader over it
 *     (fp_reader_open_image; attach with fp_image_get_target's desc);
 *   - fp_image_builder: assembles an image and serialises it;
 *   - fp_recorder: a reader that forwards to another and records the ranges
 *     read, to copy them into a builder.
 * Every input is untrusted: counts, sizes and addresses are checked before
 * use.  Conventions as in frameproof.h. */
#ifndef FRAMEPROOF_IMAGE_H
#define FRAMEPROOF_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/export.h"
#include "frameproof/frameproof.h"
#include "frameproof/reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The format version this library writes and reads. */
#define FP_IMAGE_FORMAT_VERSION 1u
/* Bounds on what an image may hold (larger inputs fail with FP_E_LIMIT). */
#define FP_IMAGE_MAX_REGIONS 1000000u
#define FP_IMAGE_MAX_BYTES (1024ull * 1024ull * 1024ull) /* region bytes in total */
#define FP_IMAGE_MAX_THREADS 65536u
#define FP_IMAGE_VERSION_LEN 32                          /* version string field, NUL included */

typedef struct fp_image fp_image;

/* Facts about the imaged target. */
typedef struct fp_image_meta {
    int32_t pid;             /* of the captured process (informational) */
    uint32_t hexversion;     /* PY_VERSION_HEX */
    bool free_threaded;
    bool debug;              /* Py_DEBUG build */
    uint64_t runtime_addr;   /* address of _PyRuntime */
    char version[FP_IMAGE_VERSION_LEN]; /* "3.14.0b4" */
    uint64_t asyncio_debug_addr; /* asyncio's debug offsets table, when the image holds the
                                  * memory of a task graph read (snapshot --async); else 0 */
} fp_image_meta;

/* One thread of the target as seen when it was captured. */
typedef struct fp_image_thread {
    uint64_t native_id;      /* kernel thread id */
    char state;              /* scheduler state letter ('R', 'S', ...), 0 if unknown */
} fp_image_thread;

/* Parses and validates the image in file path, or in buf[0..len) (copied).
 * The caller owns *out (fp_image_free).  err (may be NULL) receives the
 * message on failure.  Errors: FP_E_FORMAT (malformed), FP_E_UNSUPPORTED
 * (unknown format version), FP_E_LIMIT (a bound above exceeded), FP_E_IO,
 * FP_E_NOMEM, FP_E_INVALID_ARG. */
FP_API int fp_image_open(const char *path, fp_image **out, char *err, size_t errlen);
FP_API int fp_image_open_mem(const void *buf, size_t len, fp_image **out, char *err, size_t errlen);
FP_API void fp_image_free(fp_image *img);

/* Opens a reader of img's regions (a byte outside them: FP_E_READ).  It
 * borrows img, which must outlive it; fp_reader_close frees nothing.
 * Errors: FP_E_INVALID_ARG. */
FP_API int fp_reader_open_image(fp_image *img, fp_reader *out);

/* The target description to attach with (pid 0: no live process).
 * Errors: FP_E_INVALID_ARG. */
FP_API int fp_image_get_target(const fp_image *img, fp_target_desc *out);
/* Copies img's metadata into *out.  Errors: FP_E_INVALID_ARG. */
FP_API int fp_image_get_meta(const fp_image *img, fp_image_meta *out);
/* img's threads, i in [0, count): NULL for i out of range; owned by img. */
FP_API size_t fp_image_get_thread_count(const fp_image *img);
FP_API const fp_image_thread *fp_image_get_thread(const fp_image *img, size_t i);
/* Number of regions, and their bytes in total. */
FP_API size_t fp_image_get_region_count(const fp_image *img);
FP_API uint64_t fp_image_get_region_bytes(const fp_image *img);

typedef struct fp_image_builder fp_image_builder;

/* Creates a builder of an image with metadata meta (copied).  The caller
 * owns *out (fp_image_builder_free).  Errors: FP_E_INVALID_ARG, FP_E_NOMEM. */
FP_API int fp_image_builder_new(const fp_image_meta *meta, fp_image_builder **out);
FP_API void fp_image_builder_free(fp_image_builder *b);
/* Adds a thread.  Errors: FP_E_INVALID_ARG, FP_E_LIMIT, FP_E_NOMEM. */
FP_API int fp_image_builder_add_thread(fp_image_builder *b, uint64_t native_id, char state);
/* Adds the region addr..addr+len holding data[0..len) (copied), in any
 * order; touching regions are merged.  Errors: FP_E_INVALID_ARG,
 * FP_E_LIMIT, FP_E_NOMEM. */
FP_API int fp_image_builder_add_region(fp_image_builder *b, uint64_t addr, const void *data, size_t len);
/* Serialises b into a malloc'd buffer *out of *outlen bytes, which the
 * caller frees.  Errors: FP_E_INVALID_ARG (overlapping regions), FP_E_LIMIT,
 * FP_E_NOMEM; message in err (may be NULL). */
FP_API int fp_image_builder_serialize(fp_image_builder *b, uint8_t **out, size_t *outlen, char *err, size_t errlen);
/* Writes b to path, through a temporary file renamed into place.  Errors:
 * as fp_image_builder_serialize, and FP_E_IO. */
FP_API int fp_image_builder_write(fp_image_builder *b, const char *path, char *err, size_t errlen);

/* Recorder granule: a power of two in [FP_RECORD_MIN_GRANULE,
 * FP_RECORD_MAX_GRANULE], never above a page, so a readable range rounded
 * out to granules stays readable. */
#define FP_RECORD_DEFAULT_GRANULE 64u
#define FP_RECORD_MIN_GRANULE 8u
#define FP_RECORD_MAX_GRANULE 4096u
#define FP_RECORD_MAX_RANGES 1000000u

typedef struct fp_recorder fp_recorder;

/* Creates a recorder over inner (borrowed: it must outlive the recorder),
 * granule 0 for the default.  The caller owns *out (fp_recorder_free).
 * Errors: FP_E_INVALID_ARG, FP_E_NOMEM. */
FP_API int fp_recorder_new(const fp_reader *inner, uint32_t granule, fp_recorder **out);
FP_API void fp_recorder_free(fp_recorder *r);
/* Opens a reader that forwards to r's inner reader and records every
 * successful read, rounded out to granules.  It borrows r; fp_reader_close
 * frees nothing.  Errors: FP_E_INVALID_ARG. */
FP_API int fp_reader_open_recorder(fp_recorder *r, fp_reader *out);
/* Number of distinct ranges recorded (after merging). */
FP_API size_t fp_recorder_get_range_count(fp_recorder *r);
/* Reads every recorded range through the inner reader again and adds it
 * to b (a range no longer readable: the granules that still are).  Errors:
 * FP_E_INVALID_ARG, FP_E_LIMIT, FP_E_NOMEM; message in err (may be NULL). */
FP_API int fp_recorder_capture(fp_recorder *r, fp_image_builder *b, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* FRAMEPROOF_IMAGE_H */
