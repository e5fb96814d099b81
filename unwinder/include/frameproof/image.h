/* image.h — memory images (.fpimg): the readable memory of a target that a
 * sample needs, plus the facts needed to attach to it, so a sample can be
 * replayed offline, tested byte for byte and fuzzed.  The file format is
 * documented in docs/image-format.md.
 *
 * Three parts:
 *   - fp_image: a parsed, validated image (from a file or a buffer) and an
 *     fp_reader over it.  Reading any byte outside the image's regions gives
 *     FP_E_READ.  Attach with fp_session_attach_reader(s, &reader, &desc)
 *     using fp_image_get_target() for desc.
 *   - fp_image_builder: assembles an image (metadata, threads, regions) and
 *     serialises it to a buffer or a file.
 *   - fp_recorder: an fp_reader that wraps another reader and records every
 *     range read through it (rounded out to a granule), then copies those
 *     ranges into a builder.
 *
 * Every input is untrusted: counts, sizes and addresses are bounded and
 * checked before use.  Handles are used from one thread at a time; there is
 * no global state.
 */
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
} fp_image_meta;

/* One thread of the target as seen when it was captured. */
typedef struct fp_image_thread {
    uint64_t native_id;      /* kernel thread id */
    char state;              /* scheduler state letter ('R', 'S', ...), 0 if unknown */
} fp_image_thread;

/* Parses the image in file `path` or in buf[0..len) (the buffer is copied).
 * Returns FP_OK, FP_E_FORMAT (malformed: bad magic, truncated, overlapping or
 * unsorted regions, trailing bytes), FP_E_UNSUPPORTED (unknown format
 * version), FP_E_LIMIT (a bound above is exceeded), FP_E_IO, FP_E_NOMEM or
 * FP_E_INVALID_ARG.  err (may be NULL) receives a message on failure. */
FP_API int fp_image_open(const char *path, fp_image **out, char *err, size_t errlen);
FP_API int fp_image_open_mem(const void *buf, size_t len, fp_image **out, char *err, size_t errlen);
FP_API void fp_image_free(fp_image *img);

/* An fp_reader over the image's regions.  It borrows img, which must
 * outlive it; fp_reader_close on it is harmless and frees nothing. */
FP_API int fp_reader_open_image(fp_image *img, fp_reader *out);

/* The target description to attach with (pid is 0: an image has no live
 * process to query). */
FP_API int fp_image_get_target(const fp_image *img, fp_target_desc *out);

FP_API int fp_image_get_meta(const fp_image *img, fp_image_meta *out);
FP_API size_t fp_image_get_thread_count(const fp_image *img);
/* NULL when i is out of range. */
FP_API const fp_image_thread *fp_image_get_thread(const fp_image *img, size_t i);
FP_API size_t fp_image_get_region_count(const fp_image *img);
FP_API uint64_t fp_image_get_region_bytes(const fp_image *img);

/* Builder.  Regions may be added in any order; touching regions are merged
 * and overlapping ones make serialisation fail with FP_E_INVALID_ARG. */
typedef struct fp_image_builder fp_image_builder;

FP_API int fp_image_builder_new(const fp_image_meta *meta, fp_image_builder **out);
FP_API void fp_image_builder_free(fp_image_builder *b);
FP_API int fp_image_builder_add_thread(fp_image_builder *b, uint64_t native_id, char state);
/* Copies data[0..len). */
FP_API int fp_image_builder_add_region(fp_image_builder *b, uint64_t addr, const void *data, size_t len);
/* Serialises into a malloc'd buffer the caller frees. */
FP_API int fp_image_builder_serialize(fp_image_builder *b, uint8_t **out, size_t *outlen, char *err, size_t errlen);
/* Writes the image to path (through a temporary file renamed into place). */
FP_API int fp_image_builder_write(fp_image_builder *b, const char *path, char *err, size_t errlen);

/* Recording reader.  granule: power of two in [FP_RECORD_MIN_GRANULE,
 * FP_RECORD_MAX_GRANULE] (0 = default).  Because a granule never exceeds a
 * page, rounding a readable range out to granules stays readable. */
#define FP_RECORD_DEFAULT_GRANULE 64u
#define FP_RECORD_MIN_GRANULE 8u
#define FP_RECORD_MAX_GRANULE 4096u
#define FP_RECORD_MAX_RANGES 1000000u

typedef struct fp_recorder fp_recorder;

/* inner is borrowed and must outlive the recorder. */
FP_API int fp_recorder_new(const fp_reader *inner, uint32_t granule, fp_recorder **out);
FP_API void fp_recorder_free(fp_recorder *r);
/* A reader that forwards to inner and records every successful read. */
FP_API int fp_reader_open_recorder(fp_recorder *r, fp_reader *out);
/* Number of distinct ranges recorded so far (after merging). */
FP_API size_t fp_recorder_get_range_count(fp_recorder *r);
/* Reads every recorded range through inner again and adds it to b (ranges
 * that became unreadable are added in the granules still readable). */
FP_API int fp_recorder_capture(fp_recorder *r, fp_image_builder *b, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* FRAMEPROOF_IMAGE_H */
