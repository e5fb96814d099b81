/* fuzz_common.h — shared by the fuzz targets: the libFuzzer entry point's
 * declaration, an oracle check that aborts with a message (so every engine
 * and the plain replay driver report it as a crash), the check that an
 * error comes with a message, and little-endian
 * helpers for building inputs. */
#ifndef FP_FUZZ_COMMON_H
#define FP_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An oracle violation: print where and why, then abort. */
#define FUZZ_CHECK(cond, ...)                                                   \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "%s:%d: oracle violated: %s: ", __FILE__, __LINE__, \
                    #cond);                                                     \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
            abort();                                                            \
        }                                                                       \
    } while (0)

/* An error without a message is a bug: every failing call that has a
 * message channel (fp_session_get_errmsg, an image err buffer, an fpi_errbuf)
 * must leave a readable message in it. */
#define FUZZ_CHECK_MESSAGE(rc, msg)                                              \
    FUZZ_CHECK((rc) >= 0 || ((msg) != NULL && (msg)[0] != 0),                   \
               "error %d without a message", (int)(rc))

static inline uint16_t fz_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t fz_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t fz_le64(const uint8_t *p)
{
    return (uint64_t)fz_le32(p) | (uint64_t)fz_le32(p + 4) << 32;
}

static inline void fz_put64(uint8_t *p, uint64_t v)
{
    for (unsigned i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void fz_put32(uint8_t *p, uint32_t v)
{
    for (unsigned i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

#endif /* FP_FUZZ_COMMON_H */
