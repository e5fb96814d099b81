/* fuzz_image_session.h — what the targets that read mutated memory images
 * share: the input opened as an image and a session attached to it through
 * the image reader, each step's code checked to be a documented one with a
 * message.  Header-only: each target is its own program. */
#ifndef FUZZ_IMAGE_SESSION_H
#define FUZZ_IMAGE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "frameproof/frameproof.h"
#include "frameproof/image.h"

/* A code the library documents (FP_OK or one of its FP_E_*). */
static inline bool fuzz_known_code(int rc)
{
    return rc <= FP_OK && rc >= FP_E_STATE;
}

/* Opens data as an image (*img) and attaches a new session (*s) to it
 * through *rd (the caller's: the session reads through it until freed) with
 * limits max_depth, max_threads and max_interpreters, the rest of the
 * options their defaults but thread_cpu_state (an image has no /proc).
 * True when attached; false when the input was refused (checked: a
 * documented code with a message), with *img and *s set to what the caller
 * frees either way (fp_session_free, fp_image_free take NULL). */
static inline bool fuzz_image_session(const uint8_t *data, size_t size, uint32_t max_depth, uint32_t max_threads,
                                      uint32_t max_interpreters, fp_reader *rd, fp_image **img, fp_session **s)
{
    char err[256] = "";
    *img = NULL;
    *s = NULL;
    int rc = fp_image_open_mem(data, size, img, err, sizeof err);
    FUZZ_CHECK_MESSAGE(rc, err);
    FUZZ_CHECK(rc == FP_OK || rc == FP_E_FORMAT || rc == FP_E_UNSUPPORTED || rc == FP_E_LIMIT || rc == FP_E_NOMEM,
               "image open returned %d", rc);
    if (rc)
        return false;
    fp_target_desc desc;
    fp_reader_open_image(*img, rd);
    fp_image_get_target(*img, &desc);
    fp_options o;
    fp_options_init(&o);
    o.max_depth = max_depth;
    o.max_threads = max_threads;
    o.max_interpreters = max_interpreters;
    o.thread_cpu_state = false;
    if (fp_session_new(&o, s))
        return false;
    rc = fp_session_attach_reader(*s, rd, &desc);
    FUZZ_CHECK(fuzz_known_code(rc), "attach returned %d", rc);
    FUZZ_CHECK_MESSAGE(rc, fp_session_get_errmsg(*s));
    return rc == FP_OK;
}

#endif /* FUZZ_IMAGE_SESSION_H */
