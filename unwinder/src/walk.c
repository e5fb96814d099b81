/* walk.c — one sample: every interpreter, every thread, every frame.
 *
 * The stages run in one direction: the sample's first read (read_ahead.c),
 * each interpreter's words (interp_read.c), then its threads, all at once
 * from the read-ahead with one read-back (walk_batch.c) or one by one,
 * each retried on its own (retry.c, thread.c), down the interpreter's
 * list, which is walked again from its head when a thread left it under
 * the walk (thread_list.c).  A walk that cannot be completed is reported
 * as an error on the thread, never as a shorter stack. */
#include "read.h"
#include "read_ahead.h"
#include "retry.h"
#include "thread_list.h"
#include "walk.h"
#include "walk_batch.h"

#define RUNTIME_SPAN_MAX 64

int fpi_walk_all(fp_session *s, fp_sample *sm)
{
    const fpi_layout *l = &s->layout;
    fpi_sample_reset(sm);
    s->sample_no++;
    s->confirm_epoch++;
    /* This sample's thread list becomes the guess for the next one. */
    fpi_seen_last *sl = &s->seen_last;
    fpi_thread_memo *tl = sl->last;
    size_t tcap = sl->last_cap;
    sl->last = sl->cur;
    sl->last_cap = sl->cur_cap;
    sl->nlast = sl->ncur;
    sl->cur = tl;
    sl->cur_cap = tcap;
    sl->ncur = 0;
    fpi_code_cache_begin_sample(&s->cc);
    fpi_rb_ahead_begin_sample(&s->rb_ahead);
    fpi_frame_cache_begin_sample(&s->fc);
    uint64_t runtime = s->info.runtime_addr;
    /* interpreters.head and main_thread sit a few words apart: one read. */
    uint8_t rt[RUNTIME_SPAN_MAX];
    int32_t lo = l->rt_interpreters_head;
    int32_t mt = l->rt_main_thread;
    size_t span = mt > lo && mt - lo + 8 <= RUNTIME_SPAN_MAX ? (size_t)(mt - lo) + 8 : 8;
    fpi_interp_words spec;
    long spec_threads = fpi_first_read(s, runtime + (uint64_t)lo, rt, span, &spec);
    /* A first read that failed most likely met a chunk since freed: no
     * more stacks read ahead in this sample. */
    bool stacks_ahead = !(s->seen_last.interp && spec_threads < 0);
    int rc = spec_threads < 0 ? fpi_read(s, runtime + (uint64_t)lo, rt, span) : FP_OK;
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read the interpreter list at 0x%llx", (unsigned long long)runtime);
    uint64_t interp = fpi_load_u64(rt, 0);
    s->seen_last.interp = interp;
    uint64_t main_tid = span > 8 ? fpi_load_u64(rt, mt - lo) : 0;
    int result = FP_OK;
    fpi_errbuf first_err = {{0}};
    uint32_t ninterp = 0;
    uint64_t torn_ts = 0; /* a thread state the batched read-back found changed */
    bool list_failed = false; /* a list cut short, or its main thread missing */
    while (interp) {
        if (++ninterp > s->opts.max_interpreters)
            return fpi_err(&s->err, FP_E_LIMIT, "interpreter list: more than %u interpreters (or a cycle)", s->opts.max_interpreters);
        fpi_interp_info ii;
        bool first = ninterp == 1;
        if ((rc = fpi_read_interp(s, interp, runtime, main_tid, first ? &spec : NULL, &ii)))
            return rc;
        if (first)
            s->seen_last.gilp = ii.gilp;
        fp_interp *fi = fpi_sample_push_interp(sm);
        if (!fi)
            return fpi_err(&s->err, FP_E_NOMEM, "out of memory: adding interpreter %zu to the sample", sm->ninterps + 1);
        fi->id = ii.id;
        fi->first_thread = sm->nthreads;
        size_t interp_index = sm->ninterps - 1;
        if (first && spec.addr == interp && spec_threads >= 0)
            fpi_finish_thread_reads(s, &ii, (size_t)spec_threads);
        else
            fpi_prefetch_threads(s, &ii, stacks_ahead);
        /* Several threads all read ahead: one read-back for all of them. */
        if (s->ahead.npf > 1) {
            rc = fpi_walk_interp_batched(s, sm, &ii, &torn_ts);
            sm->interps[interp_index].thread_count = sm->nthreads - sm->interps[interp_index].first_thread;
            if (rc == FP_OK) {
                fpi_one_main_thread(sm, &sm->interps[interp_index], !ii.threads_main, false);
                interp = ii.next;
                continue;
            }
            if (fpi_walk_fatal(rc))
                return rc;
        }
        uint64_t ts = ii.threads_head, link = interp + (uint64_t)l->interp_threads_head;
        uint32_t nthreads = 0;
        unsigned restarts = 0;
        bool cut = false; /* the list was not followed to its end */
        size_t threads0 = sm->nthreads, frames0 = sm->nframes, memo0 = s->seen_last.ncur;
        int result0 = result; /* a restart walks this interpreter's failed threads again too */
        fpi_errbuf err0 = first_err;
        while (ts) {
            if (++nthreads > s->opts.max_threads)
                return fpi_err(&s->err, FP_E_LIMIT, "thread list: more than %u threads in interpreter %lld (or a cycle)",
                              s->opts.max_threads, (long long)ii.id);
            uint64_t next = 0;
            size_t before = sm->nthreads;
            size_t k = nthreads - 1;
            const fpi_thread_prefetch *pre = k < s->ahead.npf && s->ahead.pf[k].ts == ts ? &s->ahead.pf[k] : NULL;
            if ((rc = fpi_remember_thread(s, interp, ts)))
                return rc;
            bool link_left;
            uint64_t link_now;
            const fpi_thread_at at = {.link = link, .ts = ts, .pre = pre, .fresh = ts == torn_ts};
            rc = fpi_walk_thread(s, sm, &ii, &at, &next, &link_left, &link_now);
            /* Keep the interpreter's thread range exact on every exit path. */
            sm->interps[interp_index].thread_count = sm->nthreads - sm->interps[interp_index].first_thread;
            if (rc) {
                if (fpi_walk_fatal(rc))
                    return rc;
                if (sm->nthreads == before) { /* the thread list itself is broken */
                    fpi_errbuf why = s->err;
                    return fpi_err(&s->err, FP_E_INCOMPLETE, "incomplete sample: %s", why.msg);
                }
                /* The link that led to the thread leads elsewhere now: the
                 * thread left the list while it was read (it exited), or
                 * the thread state holding the link did, or a thread
                 * started in front of it.  Which one, the link cannot say
                 * (a state freed and set up again for a new thread holds
                 * an empty link: followed, it cut the list short and lost
                 * the main thread: live scenario thread_churn, debug builds).
                 * The interpreter's threads are walked again from its list
                 * head as it is now, a bounded number of times, rather than
                 * rejecting the sample for a thread that exited under the
                 * walk (which thread_churn did for every exit).  The link
                 * is read here unless fpi_walk_thread's last retry found it
                 * moved already; when the link is the list head, what it
                 * was read naming is the head to start from. */
                uint64_t head_at = interp + (uint64_t)l->interp_threads_head, head = 0;
                if (rc != FP_E_LIMIT && restarts < FPI_THREAD_LIST_RESTARTS &&
                    (link_left || fpi_link_moved_from(s, link, ts, &link_now)) &&
                    (link == head_at ? (head = link_now, true)
                                     : fpi_read(s, head_at, &head, sizeof head) == FP_OK)) {
                    restarts++;
                    sm->nthreads = threads0;
                    sm->nframes = frames0;
                    sm->interps[interp_index].thread_count = 0;
                    s->seen_last.ncur = memo0;
                    result = result0;
                    first_err = err0;
                    nthreads = 0;
                    link = head_at;
                    ts = head;
                    continue;
                }
                if (result == FP_OK) {
                    result = rc == FP_E_LIMIT ? FP_E_LIMIT : FP_E_INCOMPLETE;
                    first_err = s->err;
                }
                /* Its next link came from a copy that failed its checks
                 * (a torn list head can even point into the middle of a
                 * thread state): the list is followed on only if the
                 * link and that next link still hold. */
                if (!fpi_list_link_holds(s, link, ts, next)) {
                    cut = true;
                    break;
                }
            }
            link = ts + (uint64_t)l->ts_next;
            ts = next;
        }
        fpi_one_main_thread(sm, &sm->interps[interp_index], !ii.threads_main, cut);
        list_failed |= cut;
        /* Checked after a failed thread too: a list that ends at a state
         * being set up (3.11) reads as whole without its main thread. */
        if (fpi_check_main_listed(s, sm, sm->interps[interp_index].first_thread,
                                  sm->interps[interp_index].thread_count, &ii) != FP_OK) {
            if (result == FP_OK) {
                result = FP_E_INCOMPLETE;
                first_err = s->err;
            }
            list_failed = true;
        }
        interp = ii.next;
    }
    if (result != FP_OK)
        s->err = first_err;
    sm->threads_failed_alone = result != FP_OK && !list_failed;
    return result;
}
