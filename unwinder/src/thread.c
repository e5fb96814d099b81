/* thread.c — one walk of one thread: its thread state (ids, GIL, exception,
 * top frame), its chunks copied and its chain followed (chain.c), then,
 * unless the interpreter's batch collects the walk (batch.c), everything
 * it used read back (verify.c) before its frames are resolved (emit.c) and
 * once more where they owe it.  No retry here (retry.c): a walk that
 * fails is the thread's error. */
#include <string.h>

#include "batch.h"
#include "chain.h"
#include "emit.h"
#include "proc_state.h"
#include "read.h"
#include "thread.h"
#include "verify.h"

/* Bytes read ahead beyond the live part of a chunk the last sample saw, so
 * a stack a few frames deeper still comes with the first read. */
#define SPEC_CHUNK_MARGIN 1024u

/* Remembers where the thread just walked (the last one remembered) had its
 * newest chunk (ch's chunks) and _PyCFrame: the next sample's first read
 * takes them. */
static void remember_stack(fp_session *s, const fpi_chain *ch, uint64_t ts, uint64_t cframe)
{
    if (s->seen_last.ncur == 0 || s->seen_last.cur[s->seen_last.ncur - 1].ts != ts)
        return;
    fpi_thread_memo *m = &s->seen_last.cur[s->seen_last.ncur - 1];
    m->cframe = cframe;
    m->chunk = m->chunk_read = 0;
    m->nold = 0;
    if (ch->nchunks == 0)
        return;
    for (size_t i = 1; i < ch->nchunks && m->nold < FPI_SPEC_OLD_CHUNKS; i++, m->nold++) {
        m->old[m->nold] = ch->chunks[i].remote;
        m->old_len[m->nold] = ch->chunks[i].size;
    }
    const fpi_chunk_copy *c = &ch->chunks[0];
    uint64_t cap = c->alloc < FPI_MAX_CHUNK_BYTES ? c->alloc : FPI_MAX_CHUNK_BYTES;
    m->chunk = c->remote;
    m->chunk_read = c->size + SPEC_CHUNK_MARGIN < cap ? c->size + SPEC_CHUNK_MARGIN : cap;
}

/* Collects the chain, reads back everything it used (verify.c), then
 * resolves the frames. */
static int walk_frames(fp_session *s, const fpi_thread_walk *w, fp_sample *sm, fp_thread *th, uint64_t top,
                       uint64_t base_frame, fpi_verify_want *want)
{
    fpi_chain *ch = w->chain;
    int rc = fpi_collect_chain(s, ch, th, top, base_frame, w->spec_frames, want->stopped);
    if (!rc && w->batch)
        return fpi_batch_defer(s, w->batch, ch, sm, th, want); /* read back with the interpreter's other threads */
    /* Two read-backs: a copy torn by a thread switching chains between its
     * reads, read back torn the same way, must also be read so a second
     * time (each more read asks the thread to switch twice more in step
     * with the reads); where the callee check refuses such a mixture, the
     * second only for a walk with a link it did not compare (verify.c). */
    fpi_walk_used used = {ch->chunks, ch->nchunks, ch->seen, ch->nseen};
    size_t failed;
    unsigned first = fpi_verify_reads_first(&s->layout);
    for (unsigned i = 0; !rc && i < first; i++) {
        want->last = i + 1 == first;
        rc = fpi_verify_batch(s, want, &used, 1, &failed);
    }
    if (rc)
        return rc;
    fpi_take_top_instr(ch->pending, ch->npending, &used, want);
    fpi_frames_mark mark = fpi_frames_mark_now(s);
    rc = fpi_emit_frames(s, sm, th, ch->pending, ch->npending, want->stopped);
    fpi_owed owed = rc ? FPI_OWED_NONE : fpi_frames_owe(s, mark);
    if (owed != FPI_OWED_NONE)
        rc = fpi_verify_after_frames(s, want, &used, 1, owed == FPI_OWED_CODE);
    return rc;
}

/* Follows the exc_info chain like sys.exception(): the topmost item whose
 * value is neither NULL nor None. */
static int thread_exception(fp_session *s, uint64_t ts, const uint8_t *tsbuf, uint64_t item, int *out)
{
    const fpi_layout *l = &s->layout;
    for (uint32_t n = 0; item && n < s->opts.max_depth; n++) {
        uint64_t pair[2];
        int rc = FP_OK;
        if (item == ts + (uint64_t)l->ts_exc_state) /* the thread state's own item: already copied */
            memcpy(pair, tsbuf + l->ts_exc_state + l->err_exc_value, sizeof pair);
        else
            rc = fpi_read(s, item + (uint64_t)l->err_exc_value, pair, sizeof pair);
        if (rc)
            return rc;
        /* None, the usual exc_value of a thread with no exception, is a
         * static singleton: once known, it costs no read. */
        if (pair[0] && pair[0] != s->none_obj) {
            uint64_t type;
            if ((rc = fpi_read(s, pair[0] + (uint64_t)l->ob_type, &type, sizeof type)))
                return rc;
            int kind;
            if ((rc = fpi_type_kind(s, type, &kind)))
                return rc;
            if (kind != FPI_TYPE_NONE) {
                *out = FP_YES;
                return FP_OK;
            }
            s->none_obj = pair[0];
        }
        item = pair[1]; /* previous_item follows exc_value */
    }
    *out = item ? FP_UNKNOWN : FP_NO;
    return FP_OK;
}

int fpi_walk_thread_once(fp_session *s, fp_sample *sm, fpi_interp_info *ii, fpi_thread_walk *w)
{
    const fpi_layout *l = &s->layout;
    uint64_t link = w->link, ts = w->ts;
    const fpi_thread_prefetch *pre = w->pre;
    w->link_moved = false;
    uint8_t buf[FPI_MAX_STRUCT_READ];
    int rc = FP_OK;
    if (pre)
        memcpy(buf, pre->ts_bytes + pre->tsbuf, s->ts_read_len);
    else
        rc = fpi_read(s, ts, buf, s->ts_read_len);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read thread state at 0x%llx", (unsigned long long)ts);
    w->next = fpi_load_u64(buf, l->ts_next);
    fp_thread *th = fpi_sample_push_thread(sm);
    if (!th)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: adding thread %zu to the sample", sm->nthreads + 1);
    th->native_id = fpi_load_u64(buf, l->ts_native_thread_id);
    th->thread_id = fpi_load_u64(buf, l->ts_thread_id);
    th->interp_id = ii->id;
    th->first_frame = sm->nframes;
    /* A listed thread state that does not name this interpreter is not set
     * up yet: 3.11's new_threadstate makes the new state the list's head
     * and only then sets it up (interpreter, next link, ids: until then the
     * template's zeros).  A thread stopped in between (blocking mode), or a
     * copy and read-backs that all fall in between, showed a list of one
     * frameless thread, the main thread missing (live scenario thread_churn,
     * 3.11, blocking).  A failed walk of its own, so that the list is
     * followed on or walked again as after any thread that failed (a state
     * freed and its memory reused, reached through a stale link, fails so
     * too). */
    uint64_t owner = fpi_load_u64(buf, l->ts_interp);
    if (owner != ii->addr) {
        rc = fpi_err(&s->err, FP_E_INCOMPLETE,
                     "torn: thread state 0x%llx names interpreter 0x%llx, not 0x%llx: it is being added to the "
                     "list or taken off it",
                     (unsigned long long)ts, (unsigned long long)owner, (unsigned long long)ii->addr);
        goto fail;
    }
    /* The main thread is the interpreter's threads.main.  That is cleared
     * when finalisation starts (atexit handlers still run on the main
     * thread): only then does the runtime's main thread id decide.  The
     * ids alone cannot: a thread state whose thread has not started yet
     * carries its creator's thread id, and on 3.11 its creator's native
     * id too (a new thread's state would be listed as a frameless main
     * thread beside the real one); on 3.12 no native id yet. */
    th->main = ii->threads_main ? ts == ii->threads_main
                                : ii->main_thread_id && th->thread_id == ii->main_thread_id && th->native_id != 0;
    /* (Without threads.main, 3.11 and 3.12, fpi_one_main_thread keeps the
     * oldest state with the main thread's ids.) */
    th->holds_gil = th->gil_requested = th->on_cpu = th->exception = FP_UNKNOWN;
    if (!l->free_threaded) {
        if (l->ts_holds_gil != FPI_OFF_NONE)
            th->holds_gil = fpi_load_u32(buf, l->ts_holds_gil) ? FP_YES : FP_NO;
        else if (ii->gil_known)
            th->holds_gil = ii->gil_holder == ts ? FP_YES : FP_NO;
        if (l->ts_gil_requested != FPI_OFF_NONE)
            th->gil_requested = fpi_load_u32(buf, l->ts_gil_requested) && th->holds_gil != FP_YES ? FP_YES : FP_NO;
    }
    if (s->opts.thread_cpu_state) {
        char st = 0;
        if (s->thread_state)
            st = s->thread_state(s->thread_state_ctx, th->native_id);
        else if (s->pid > 0)
            st = fpi_proc_thread_state(s->pid, (long)th->native_id);
        if (st)
            th->on_cpu = st == 'R' ? FP_YES : FP_NO;
    }
    int exc = FP_NO;
    if (fpi_load_u64(buf, l->ts_current_exception) != 0)
        exc = FP_YES;
    else if ((rc = thread_exception(s, ts, buf, fpi_load_u64(buf, l->ts_exc_info), &exc)) && fpi_walk_fatal(rc))
        goto fail;
    th->exception = rc ? FP_UNKNOWN : exc;
    rc = FP_OK; /* an exception that could not be read only leaves it unknown */

    uint64_t top, cframe = 0;
    if (l->ts_current_frame != FPI_OFF_NONE) {
        top = fpi_load_u64(buf, l->ts_current_frame);
    } else {
        cframe = fpi_load_u64(buf, l->ts_cframe);
        top = 0;
        if (cframe && pre && pre->has_cframe_top && pre->cframe == cframe)
            top = pre->cframe_top;
        else if (cframe && (rc = fpi_read(s, cframe + (uint64_t)l->cframe_current_frame, &top, sizeof top))) {
            rc = fpi_err_code(&s->err, rc, "cannot read the _PyCFrame of thread %llu", (unsigned long long)th->native_id);
            goto fail;
        }
        /* Only the thread state's own _PyCFrame has no frame (no evaluation
         * running); an evaluation's has none only while it is being
         * entered (or through a _PyCFrame it has left). */
        if (cframe && !top && l->ts_root_cframe != FPI_OFF_NONE && cframe != ts + (uint64_t)l->ts_root_cframe) {
            rc = fpi_err(&s->err, FP_E_INCOMPLETE,
                         "torn: thread %llu's current _PyCFrame at 0x%llx has no frame yet (an evaluation being "
                         "entered)",
                         (unsigned long long)th->native_id, (unsigned long long)cframe);
            goto fail;
        }
    }
    uint64_t base = l->ts_base_frame != FPI_OFF_NONE ? fpi_load_u64(buf, l->ts_base_frame) : 0;
    /* A thread state with no Python frames (3.15+: its top is the base
     * frame) has nothing in its data stack to copy, but is read back like
     * any other: a thread state freed and being set up again at the same
     * address looks frameless and ends the list (next NULL), which would
     * drop every thread after it from a sample returned as good. */
    bool frameless = top && top == base;
    fpi_verify_want want = {
        .native_id = th->native_id,
        .link_addr = link,
        .ts = ts,
        .tsbuf = buf,
        .cframe_addr = cframe,
        .top = top,
        /* Alone, or with every other thread (a blocking session, or a walk
         * under a stop of the caller's): the one place it is said. */
        .stopped = w->stopped || s->opts.blocking || s->all_stopped,
        .alone = w->alone,
        .generation_addr = l->interp_code_generation != FPI_OFF_NONE ? ii->addr + (uint64_t)l->interp_code_generation : 0,
        .generation = ii->generation,
        .generation_seen = ii->generation,
    };
    fpi_chain *ch = w->chain;
    if (frameless)
        ch->nchunks = 0;
    else
        rc = fpi_copy_chunks(s, ch, fpi_load_u64(buf, l->ts_datastack_chunk), fpi_load_u64(buf, l->ts_datastack_top), pre);
    if (!rc) {
        remember_stack(s, ch, ts, cframe);
        rc = walk_frames(s, w, sm, th, top, base, &want);
    }
    w->link_moved = want.link_moved;
    if (want.generation_seen != want.generation) {
        /* Code objects were freed while the thread was read: none of the
         * cached ones can be trusted for the retry. */
        fpi_code_cache_invalidate(&s->cc);
        s->code_generation = ii->generation = want.generation_seen;
    }
    if (!rc)
        return FP_OK;
fail:
    /* The thread stays in the sample, failed, saying why (left without its
     * error, it would read as a good thread).  th may have moved if frames
     * grew the arrays: re-fetch. */
    th = &sm->threads[sm->nthreads - 1];
    sm->nframes = th->first_frame;
    th->frame_count = 0;
    th->error = rc;
    return rc;
}
