/* fuzz_image_unwind.c — whole unwinds of mutated memory images.  Seeds are
 * the images captured from real interpreters (corpora/images); the input is
 * parsed as an image, a session is attached through the image reader and
 * two samples are taken (cold, then with the code cache warm).
 *
 * Checked: no crash, hang or over-read (ASan/UBSan); every call returns a
 * documented code; a sample that succeeds is internally consistent (thread
 * and frame ranges inside the sample, interpreter ids from 0 as CPython's, strings present, positions either
 * FP_POS_NONE or sensible); every failing call leaves a message.  Limits are kept small so a run stays fast.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz_common.h"
#include "fuzz_image_session.h"
#include "frameproof/frameproof.h"
#include "frameproof/image.h"

#define FUZZ_MAX_DEPTH 512u
#define FUZZ_MAX_THREADS 64u
#define FUZZ_MAX_INTERPRETERS 8u
#define SAMPLES 2

static void check_sample(const fp_sample *sm, int rc)
{
    size_t ni = fp_sample_get_interp_count(sm), nt = fp_sample_get_thread_count(sm), nf = fp_sample_get_frame_count(sm);
    FUZZ_CHECK(ni <= FUZZ_MAX_INTERPRETERS, "%zu interpreters", ni);
    size_t threads_seen = 0;
    for (size_t i = 0; i < ni; i++) {
        const fp_interp *in = fp_sample_get_interp(sm, i);
        FUZZ_CHECK(in->first_thread <= nt && in->thread_count <= nt - in->first_thread,
                   "interpreter %zu: threads [%zu,+%zu) of %zu", i, in->first_thread, in->thread_count, nt);
        FUZZ_CHECK(in->thread_count <= FUZZ_MAX_THREADS, "%zu threads", in->thread_count);
        FUZZ_CHECK(in->id >= 0, "interpreter %zu has id %lld", i, (long long)in->id); /* CPython counts from 0 */
        threads_seen += in->thread_count;
    }
    FUZZ_CHECK(threads_seen == nt, "interpreters cover %zu of %zu threads", threads_seen, nt);
    for (size_t t = 0; t < nt; t++) {
        const fp_thread *th = fp_sample_get_thread(sm, t);
        FUZZ_CHECK(th->first_frame <= nf && th->frame_count <= nf - th->first_frame,
                   "thread %zu: frames [%zu,+%zu) of %zu", t, th->first_frame, th->frame_count, nf);
        FUZZ_CHECK(th->frame_count <= FUZZ_MAX_DEPTH, "%zu frames", th->frame_count);
        FUZZ_CHECK(th->interp_id >= 0, "thread %zu in interpreter %lld", t, (long long)th->interp_id);
        FUZZ_CHECK(fuzz_known_code(th->error), "thread error %d", th->error);
        if (th->error)
            FUZZ_CHECK(th->frame_count == 0 && rc != FP_OK, "a failed thread (%d) kept %zu frames, sample rc %d",
                       th->error, th->frame_count, rc);
        for (size_t f = th->first_frame; f < th->first_frame + th->frame_count; f++) {
            const fp_frame *fr = fp_sample_get_frame(sm, f);
            FUZZ_CHECK(fr->function && fr->name && fr->file, "frame %zu has a NULL string", f);
            /* Touch every byte (ASan checks the strings are live). */
            volatile size_t sink = strlen(fr->function) + strlen(fr->name) + strlen(fr->file);
            (void)sink;
            FUZZ_CHECK(fr->kind == FP_FRAME_PYTHON || fr->kind == FP_FRAME_GENERATOR, "frame kind %d", fr->kind);
            FUZZ_CHECK(fr->instr_offset >= 0, "instruction offset %d", fr->instr_offset);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fp_image *img = NULL;
    fp_session *s = NULL;
    fp_reader rd;
    fp_sample *sm = NULL;
    int rc;
    if (!fuzz_image_session(data, size, FUZZ_MAX_DEPTH, FUZZ_MAX_THREADS, FUZZ_MAX_INTERPRETERS, &rd, &img, &s) ||
        fp_sample_new(&sm))
        goto out;
    fp_python_info py;
    FUZZ_CHECK(fp_session_get_python(s, &py) == FP_OK, "no python info after attach");
    FUZZ_CHECK(memchr(py.version, 0, sizeof py.version) != NULL, "unterminated version");
    for (int i = 0; i < SAMPLES; i++) {
        rc = fp_session_sample(s, sm);
        FUZZ_CHECK(fuzz_known_code(rc) && rc != FP_E_PROCESS_GONE && rc != FP_E_PERMISSION,
                   "sample returned %d", rc);
        FUZZ_CHECK_MESSAGE(rc, fp_session_get_errmsg(s));
        check_sample(sm, rc);
    }
out:
    fp_sample_free(sm);
    fp_session_free(s);
    fp_image_free(img);
    return 0;
}
