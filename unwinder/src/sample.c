/* sample.c — the reusable sample object: growable arrays of interpreters,
 * threads and frames that keep their storage between samples. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "session.h"

#define SAMPLE_INITIAL 64

int fp_sample_new(fp_sample **out)
{
    if (!out)
        return FP_E_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    return *out ? FP_OK : FP_E_NOMEM;
}

void fp_sample_free(fp_sample *sm)
{
    if (!sm)
        return;
    free(sm->interps);
    free(sm->threads);
    free(sm->frames);
    free(sm);
}

int fpi_sample_reset(fp_sample *sm)
{
    sm->ninterps = sm->nthreads = sm->nframes = 0;
    sm->threads_failed_alone = false;
    return FP_OK;
}

fp_interp *fpi_sample_push_interp(fp_sample *sm)
{
    fp_interp *na = fpi_grow(sm->interps, &sm->interps_cap, sm->ninterps + 1, sizeof *na, SAMPLE_INITIAL);
    if (!na)
        return NULL;
    sm->interps = na;
    fp_interp *e = &sm->interps[sm->ninterps++];
    memset(e, 0, sizeof *e);
    return e;
}

fp_thread *fpi_sample_push_thread(fp_sample *sm)
{
    fp_thread *na = fpi_grow(sm->threads, &sm->threads_cap, sm->nthreads + 1, sizeof *na, SAMPLE_INITIAL);
    if (!na)
        return NULL;
    sm->threads = na;
    fp_thread *e = &sm->threads[sm->nthreads++];
    memset(e, 0, sizeof *e);
    return e;
}

fp_frame *fpi_sample_push_frame(fp_sample *sm)
{
    fp_frame *na = fpi_grow(sm->frames, &sm->frames_cap, sm->nframes + 1, sizeof *na, SAMPLE_INITIAL);
    if (!na)
        return NULL;
    sm->frames = na;
    fp_frame *e = &sm->frames[sm->nframes++];
    memset(e, 0, sizeof *e);
    return e;
}

size_t fp_sample_get_interp_count(const fp_sample *sm) { return sm ? sm->ninterps : 0; }
size_t fp_sample_get_thread_count(const fp_sample *sm) { return sm ? sm->nthreads : 0; }
size_t fp_sample_get_frame_count(const fp_sample *sm) { return sm ? sm->nframes : 0; }

const fp_interp *fp_sample_get_interp(const fp_sample *sm, size_t i)
{
    return sm && i < sm->ninterps ? &sm->interps[i] : NULL;
}

const fp_thread *fp_sample_get_thread(const fp_sample *sm, size_t i)
{
    return sm && i < sm->nthreads ? &sm->threads[i] : NULL;
}

const fp_frame *fp_sample_get_frame(const fp_sample *sm, size_t i)
{
    return sm && i < sm->nframes ? &sm->frames[i] : NULL;
}

const fp_thread *fp_sample_get_thread_by_native_id(const fp_sample *sm, int64_t interp_id, uint64_t native_id)
{
    for (size_t i = 0; sm && i < sm->nthreads; i++)
        if (sm->threads[i].interp_id == interp_id && sm->threads[i].native_id == native_id)
            return &sm->threads[i];
    return NULL;
}

bool fp_sample_is_usable(const fp_sample *sm, int rc)
{
    if (rc == FP_OK)
        return true;
    /* Only a failure its threads carry: a list cut short, or its main
     * thread missing, leaves threads out of the sample without an error
     * on any of them. */
    if (!sm || (rc != FP_E_INCOMPLETE && rc != FP_E_LIMIT) || !sm->threads_failed_alone)
        return false;
    for (size_t i = 0; i < sm->nthreads; i++)
        if (sm->threads[i].error)
            return true;
    return false;
}
