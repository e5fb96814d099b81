/* fuzz_synth_unwind.c — structure-aware whole unwinds: the input is decoded
 * into a *description* of a CPython address space (layout, threads, frames,
 * code objects with names of every PEP 393 kind and arbitrary location
 * tables, generator and entry frames, thread-local bytecode), the synthetic
 * image builder of tests/synth lays it out with that layout's real offsets,
 * and the unwinder must return exactly the described stacks — twice (cold,
 * then with the code cache warm).
 *
 * Every input decodes to a valid description (bytes past the end read as
 * zero), so the oracle is exact equality: names, positions, instruction
 * offsets, frame kinds, frames hidden before their first traceable
 * instruction, thread ids and the main flag.
 */
#include <stdbool.h>
#include <string.h>

#include "debug_offsets.h"
#include "fuzz_common.h"
#include "synth_input.h"

static void check_sample(const char *id, const fz_description *d, const fp_sample *sm, int rc, const char *errmsg)
{
    FUZZ_CHECK(rc == FP_OK, "%s: sample failed (%d): %s", id, rc, errmsg);
    FUZZ_CHECK(fp_sample_get_interp_count(sm) == 1, "%s: %zu interpreters", id, fp_sample_get_interp_count(sm));
    FUZZ_CHECK(fp_sample_get_thread_count(sm) == d->desc.nthreads, "%s: %zu threads, described %zu", id,
               fp_sample_get_thread_count(sm), d->desc.nthreads);
    for (size_t t = 0; t < d->desc.nthreads; t++) {
        const synth_thread *st = &d->threads[t];
        const fp_thread *th = fp_sample_get_thread(sm, t);
        FUZZ_CHECK(th->native_id == st->native_id && th->thread_id == st->thread_id,
                   "%s: thread %zu ids %llu/%llx", id, t, (unsigned long long)th->native_id,
                   (unsigned long long)th->thread_id);
        FUZZ_CHECK(th->main == st->main, "%s: thread %zu main=%d", id, t, th->main);
        FUZZ_CHECK(th->error == 0, "%s: thread %zu error %d", id, t, th->error);
        char msg[512];
        FUZZ_CHECK(fz_thread_equals(sm, th, st->frames, st->nframes, msg, sizeof msg), "%s: thread %zu: %s", id, t,
                   msg);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_cursor c = {data, size, 0};
    const char *id = fz_next_layout(&c);
    uint8_t *table = NULL;
    fz_description *d = calloc(1, sizeof *d);
    synth_image *img = NULL;
    fp_session *s = NULL;
    fp_sample *sm = NULL;
    fp_reader rd;
    if (!d)
        return 0;
    fpi_layout probe;
    if (!fz_layout_table(id, &table, &probe))
        goto out;
    fz_decode_description(&c, id, probe.co_tlbc != FPI_OFF_NONE, d);

    char err[512];
    if (synth_build(id, table, FPI_DEBUG_OFFSETS_READ, &d->desc, &img, err, sizeof err) != 0)
        goto out; /* a description the builder cannot lay out */
    int rc = fz_attach(img, &rd, &s, &sm);
    if (rc == FP_E_NOMEM)
        goto out;
    FUZZ_CHECK(rc == FP_OK, "%s: attach failed: %s", id, fp_session_get_errmsg(s));
    for (int pass = 0; pass < 2; pass++) {
        rc = fp_session_sample(s, sm);
        FUZZ_CHECK_MESSAGE(rc, fp_session_get_errmsg(s));
        check_sample(id, d, sm, rc, fp_session_get_errmsg(s));
    }
out:
    fz_release(sm, s, img, table);
    free(d);
    return 0;
}
