/* fuzz_common.h — shared by the fuzz targets: the libFuzzer entry point's
 * declaration, an oracle check that aborts with a message (so every engine
 * and the plain replay driver report it as a crash), and the check that an
 * error comes with a message.  The targets read and build the integers of
 * their inputs with the library's little-endian codec (little_endian.h). */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "little_endian.h"

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

#endif /* FUZZ_COMMON_H */
