/* fuzz_live_consistency.c — a running target, modelled: memory changes
 * *between* (and in the middle of) the unwinder's reads, and every stack it
 * accepts must be one the thread really had.
 *
 * The input describes an address space as fuzz_synth_unwind's does, then
 * a sequence of moves of its threads — returns followed by calls that
 * reuse the returned frames' data-stack slots for other code (the "ABA"
 * case), the top frame moving on to another instruction, (3.12+)
 * generators yielding and resuming, on the same thread or another, and
 * threads exiting (unlinked, their state freed) and new threads starting
 * in a freed thread state (at the list's head, the old native id or a new
 * one) — and a
 * schedule saying before or in the middle of which read of a sample each of
 * the moves' word writes lands (synth_plan_move: the interpreter's write
 * order).  The unwinder takes:
 *
 *  1. a sample of the still image: exactly the described stacks;
 *  2. a sample while the writes land: it may fail only as torn
 *     (FP_E_INCOMPLETE; a thread that failed says why: torn, or a read or
 *     an object its last attempt found broken), and every thread it
 *     returns equals one of the stacks the thread had from the sample's
 *     start to its end — never a splice of two, never a stack the thread
 *     has not reached, never a thread under another incarnation's ids; a
 *     sample returned as good has no thread twice and every thread that
 *     was in the list from the sample's start to its end;
 *  3. after the remaining writes, two samples of the still image again:
 *     exactly the final stacks, so nothing a torn sample left in the caches
 *     survives.
 *
 * The frame cache is on or off (an input bit); the speculative first read
 * of step 2 and 3 reuses the addresses sample 1 and 2 saw.  Another bit
 * takes step 1 twice: then the first read of step 2 also brings the read-
 * backs of the sample before (readback_ahead.c), and the writes land among
 * the copy and those read-backs inside that one read.  Two more set a
 * retry hook (fp_session_set_retry_hook), which must be called only
 * before the retry of a torn walk (never more often than walks tore in
 * the sample; never before anything moved, nor once a still sample has
 * refreshed what the moving one left: the first sample after the moves
 * may find a frame it took from the last sample changed), and may land
 * every write still pending when it is called — the thread running to
 * the end of its moves while a colocated sampler moves to its CPU — so
 * that the retries read the settled target.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug_offsets.h"
#include "fuzz_common.h"
#include "synth_input.h"

#define MAX_MOVES 6
#define MAX_PUSH 4
#define MAX_STATE_FRAMES (FZ_MAX_FRAMES + MAX_MOVES * MAX_PUSH)
#define MAX_STATES (1 + MAX_MOVES * (1 + MAX_PUSH))
#define MAX_WRITES 512
#define MAX_READ_GAP 4       /* reads between two scheduled writes: 0..3 */
#define SPLIT_STEPS 32       /* a write inside a read lands at k/32 of its bytes */
#define FINAL_SAMPLES 2
#define FLAG_NO_FRAME_CACHE 1u
#define FLAG_READ_BACKS_AHEAD 2u /* two still samples first: the moving one takes its read-backs ahead */
#define FLAG_RETRY_HOOK 4u       /* a retry hook is set (counted, checked) */
#define FLAG_HOOK_LANDS 8u       /* with it: the hook lands every pending write */
#define MAX_SUSPENDED 8
#define GENERATOR_MOVE 0x80u /* move kinds: a generator yields or resumes (3.12+) */
#define YIELD 0x40u
#define LIFECYCLE_MOVE 0x60u /* without GENERATOR_MOVE: a thread exits, or a new one starts */
#define REUSE_NATIVE_ID 1u   /* a new thread gets the native id of its state's last owner */
#define NEW_ID_BASE (1ull << 40) /* ids of new threads (above every described id) */
/* Set in the environment: every read of the moving sample is printed as
 * it is made, and a thread the oracle rejects with the sample, every
 * thread's states and the schedule of writes. */
#define DEBUG_ENV "FUZZ_LIVE_DEBUG"

/* A stack the thread had, innermost first, under which ids; or the
 * thread's state out of the list (absent). */
typedef struct state {
    synth_frame frames[MAX_STATE_FRAMES];
    size_t n;
    bool absent;
    uint64_t native_id, thread_id;
} state;

typedef struct scheduled {
    synth_write w;
    size_t thread;
    uint32_t read;           /* lands at the start (or inside) of this read of sample 2, 1-based */
    uint32_t split;          /* 0: before the read; k: after k/SPLIT_STEPS of its bytes */
} scheduled;

typedef struct world {
    fz_description d;
    state states[FZ_MAX_THREADS][MAX_STATES];
    size_t nstates[FZ_MAX_THREADS];
    size_t reached[FZ_MAX_THREADS]; /* states made visible so far, minus one */
    scheduled sched[MAX_WRITES];
    size_t nsched, applied;
    synth_image *img;
    fp_reader inner;
    synth_frame suspended[MAX_SUSPENDED]; /* generator frames yielded, as synth keeps them */
    size_t nsuspended;
    size_t order[FZ_MAX_THREADS]; /* the thread list as planned: thread indices, head first */
    size_t norder, initial_order;
    uint64_t new_ids;        /* threads started so far */
    bool tlbc;               /* the layout has thread-local bytecode copies */
    bool armed;              /* count reads and land writes (sample 2) */
    uint32_t reads;
    bool hook_lands;         /* the retry hook lands every pending write */
    bool hook_allowed;       /* a sample that may find a walk torn: the moving one and the first after it */
    uint64_t hook_calls;     /* calls of the retry hook in the current sample */
    bool trace_reads;        /* DEBUG_ENV set: every read of sample 2 on stderr */
} world;

static void land(world *wd)
{
    const scheduled *s = &wd->sched[wd->applied++];
    synth_apply(wd->img, &s->w);
    if (s->w.new_state)
        wd->reached[s->thread]++;
}

static int live_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    world *wd = ctx;
    if (!wd->armed)
        return fp_reader_read(&wd->inner, addr, buf, len);
    wd->reads++;
    if (wd->trace_reads)
        fprintf(stderr, "read %u: 0x%llx +%zu (writes landed before it: %zu)\n", wd->reads,
                (unsigned long long)addr, len, wd->applied);
    while (wd->applied < wd->nsched && wd->sched[wd->applied].read <= wd->reads &&
           (wd->sched[wd->applied].read < wd->reads || wd->sched[wd->applied].split == 0))
        land(wd);
    /* A write landing inside this read: the bytes before the split are
     * copied first, those after it see the write (a read is not atomic). */
    size_t done = 0;
    while (wd->applied < wd->nsched && wd->sched[wd->applied].read == wd->reads) {
        size_t at = len * wd->sched[wd->applied].split / SPLIT_STEPS;
        if (at > done) {
            int rc = fp_reader_read(&wd->inner, addr + done, (uint8_t *)buf + done, at - done);
            if (rc)
                return rc;
            done = at;
        }
        land(wd);
    }
    return fp_reader_read(&wd->inner, addr + done, (uint8_t *)buf + done, len - done);
}

static const fp_reader_ops live_ops = {
    .name = "synthetic image, changing between reads",
    .read = live_read,
    .readv = NULL,
    .close = NULL,
};

/* The retry hook: a torn walk is about to be walked again, which only a
 * moving target (sample 2) can cause. */
static void on_retry(void *ctx, uint64_t native_id)
{
    world *wd = ctx;
    wd->hook_calls++;
    FUZZ_CHECK(wd->hook_allowed, "the retry hook called for a sample of an image that has not changed (native id %llu)",
               (unsigned long long)native_id); /* the id is as the torn walk read it: it may be a half-written word */
    while (wd->hook_lands && wd->applied < wd->nsched)
        land(wd);
}

/* One sample of session s: the retry hook called at most once per torn
 * walk, and only where allowed. */
static int sample_once(const char *id, world *wd, fp_session *s, fp_sample *sm, bool allowed)
{
    fp_read_stats before, after;
    FUZZ_CHECK(fp_session_get_read_stats(s, &before) == FP_OK, "%s: no read statistics", id);
    wd->hook_calls = 0;
    wd->hook_allowed = allowed;
    int rc = fp_session_sample(s, sm);
    FUZZ_CHECK_MESSAGE(rc, fp_session_get_errmsg(s));
    FUZZ_CHECK(fp_session_get_read_stats(s, &after) == FP_OK, "%s: no read statistics", id);
    FUZZ_CHECK(wd->hook_calls <= after.torn - before.torn, "%s: the retry hook called %llu times for %llu torn walks",
               id, (unsigned long long)wd->hook_calls, (unsigned long long)(after.torn - before.torn));
    return rc;
}

static const state *top_state(const world *wd, size_t t)
{
    return &wd->states[t][wd->nstates[t] - 1];
}

static bool add_state(world *wd, size_t t, const state *s)
{
    if (wd->nstates[t] == MAX_STATES)
        return false;
    wd->states[t][wd->nstates[t]++] = *s;
    return true;
}

static bool callable_below(const synth_frame *f)
{
    /* A frame before its first traceable instruction has called nothing. */
    return f->generator || f->unit >= f->code->firsttraceable;
}

/* Thread t exits (when in the list) or, when it has exited, a new thread
 * starts in its freed state; the list model follows CPython's: a new
 * thread at the head, an exiting one unlinked where it is. */
static bool lifecycle_move(world *wd, fz_cursor *c, size_t t, synth_write *w, size_t *nw)
{
    const state *cur = top_state(wd, t);
    state next = {.native_id = cur->native_id, .thread_id = cur->thread_id};
    size_t p = 0;
    while (p < wd->norder && wd->order[p] != t)
        p++;
    if (!cur->absent) {
        if (synth_plan_thread_exit(wd->img, t, w, MAX_WRITES, nw) != FP_OK)
            return false; /* the main thread, or no room */
        next.absent = true;
        if (!add_state(wd, t, &next))
            return false;
        memmove(wd->order + p, wd->order + p + 1, (wd->norder - p - 1) * sizeof wd->order[0]);
        wd->norder--;
        return true;
    }
    uint8_t how = fz_next_byte(c);
    wd->new_ids++;
    if (!(how & REUSE_NATIVE_ID))
        next.native_id = NEW_ID_BASE + wd->new_ids;
    next.thread_id = NEW_ID_BASE + wd->new_ids;
    if (synth_plan_thread_start(wd->img, t, next.native_id, next.thread_id, w, MAX_WRITES, nw) != FP_OK ||
        !add_state(wd, t, &next))
        return false;
    memmove(wd->order + 1, wd->order, wd->norder * sizeof wd->order[0]);
    wd->order[0] = t;
    wd->norder++;
    return true;
}

/* Decodes one move of a thread and plans its writes; returns false when it
 * is skipped (the planner refused it, or buffers are full). */
static bool plan_move(world *wd, fz_cursor *c, synth_write *w, size_t *nw, size_t *thread_of)
{
    size_t t = fz_next_byte(c) % wd->d.desc.nthreads;
    const state *cur = top_state(wd, t);
    state next = *cur;
    size_t before = *nw;
    uint8_t kind = fz_next_byte(c);
    if (!(kind & GENERATOR_MOVE) && (kind & LIFECYCLE_MOVE) == LIFECYCLE_MOVE) {
        if (!lifecycle_move(wd, c, t, w, nw))
            return false;
    } else if (cur->n == 0) {
        return false;
    } else if (kind & GENERATOR_MOVE) { /* a generator yields, or a suspended one resumes */
        if (kind & YIELD) {
            if (cur->n < 2 || !cur->frames[0].generator || wd->nsuspended == MAX_SUSPENDED ||
                synth_plan_yield(wd->img, t, w, MAX_WRITES, nw) != FP_OK)
                return false;
            wd->suspended[wd->nsuspended++] = next.frames[0];
            next.n--;
            memmove(next.frames, next.frames + 1, next.n * sizeof next.frames[0]);
        } else {
            size_t which = wd->nsuspended ? fz_next_byte(c) % wd->nsuspended : 0;
            if (!wd->nsuspended || next.n == MAX_STATE_FRAMES || !callable_below(&cur->frames[0]) ||
                synth_plan_resume(wd->img, t, which, w, MAX_WRITES, nw) != FP_OK)
                return false;
            memmove(next.frames + 1, next.frames, next.n * sizeof next.frames[0]);
            next.frames[0] = wd->suspended[which];
            next.n++;
            wd->suspended[which] = wd->suspended[--wd->nsuspended]; /* as synth_plan_resume keeps them */
        }
        if (!add_state(wd, t, &next))
            return false;
    } else if (kind & 1) { /* the top frame moves on */
        synth_frame *top = &next.frames[0];
        size_t ci = (size_t)(top->code - wd->d.codes);
        top->unit = fz_next_u16(c) % wd->d.code_units[ci];
        if (synth_plan_advance(wd->img, t, top->unit, w, MAX_WRITES, nw) != FP_OK)
            return false;
        if (!add_state(wd, t, &next))
            return false;
    } else { /* returns, then calls */
        size_t npop = fz_next_byte(c) % cur->n;
        size_t npush = fz_next_byte(c) % (MAX_PUSH + 1);
        if (cur->n - npop + npush > MAX_STATE_FRAMES)
            npush = 0;
        if (!callable_below(&cur->frames[npop]))
            npush = 0;
        synth_frame push[MAX_PUSH];
        for (size_t j = 0; j < npush; j++) {
            synth_frame *f = &push[npush - 1 - j]; /* decoded outermost first */
            size_t ci = fz_next_byte(c) % wd->d.ncodes;
            int tlbc = wd->tlbc ? fz_next_byte(c) % SYNTH_MAX_TLBC : 0;
            int unit = (int)(fz_next_u16(c) % wd->d.code_units[ci]);
            *f = (synth_frame){.code = &wd->d.codes[ci], .unit = unit, .tlbc_index = tlbc};
        }
        /* Every pushed frame but the innermost has called the next one: an
         * outer frame that cannot have (before its first traceable
         * instruction) becomes the innermost. */
        for (size_t j = npush; j-- > 1;)
            if (!callable_below(&push[j])) {
                memmove(push, push + j, (npush - j) * sizeof push[0]);
                npush -= j;
                break;
            }
        if (npop == 0 && npush == 0)
            return false;
        if (synth_plan_move(wd->img, t, npop, push, npush, w, MAX_WRITES, nw) != FP_OK)
            return false;
        state popped = {.n = cur->n - npop, .native_id = cur->native_id, .thread_id = cur->thread_id};
        memcpy(popped.frames, cur->frames + npop, popped.n * sizeof popped.frames[0]);
        if (npop && !add_state(wd, t, &popped))
            return false;
        for (size_t j = npush; j-- > 0;) {
            state s = {.n = popped.n + (npush - j), .native_id = cur->native_id, .thread_id = cur->thread_id};
            memcpy(s.frames, push + j, (npush - j) * sizeof s.frames[0]);
            memcpy(s.frames + (npush - j), popped.frames, popped.n * sizeof s.frames[0]);
            if (!add_state(wd, t, &s))
                return false;
        }
    }
    for (size_t i = before; i < *nw; i++)
        thread_of[i] = t;
    return true;
}

/* A sample of the still image: exactly the first (final: the last) states,
 * the threads in list order. */
static void check_still(const char *id, const world *wd, const fp_sample *sm, int rc, const char *errmsg, bool final)
{
    const char *when = final ? "after" : "before";
    size_t n = final ? wd->norder : wd->initial_order;
    FUZZ_CHECK(rc == FP_OK, "%s: %s: sample failed (%d): %s", id, when, rc, errmsg);
    FUZZ_CHECK(fp_sample_get_thread_count(sm) == n, "%s: %s: %zu threads, %zu in the list", id, when,
               fp_sample_get_thread_count(sm), n);
    for (size_t i = 0; i < n; i++) {
        size_t t = final ? wd->order[i] : i;
        const fp_thread *th = fp_sample_get_thread(sm, i);
        const state *s = final ? top_state(wd, t) : &wd->states[t][0];
        char msg[512];
        FUZZ_CHECK(th->error == 0, "%s: %s: thread %zu error %d", id, when, t, th->error);
        FUZZ_CHECK(th->native_id == s->native_id && th->thread_id == s->thread_id &&
                       th->main == wd->d.threads[t].main,
                   "%s: %s: thread %zu: ids %llu/%llu main %d, described %llu/%llu main %d", id, when, t,
                   (unsigned long long)th->native_id, (unsigned long long)th->thread_id, th->main,
                   (unsigned long long)s->native_id, (unsigned long long)s->thread_id, wd->d.threads[t].main);
        FUZZ_CHECK(fz_thread_equals(sm, th, s->frames, s->n, msg, sizeof msg), "%s: %s: thread %zu: %s", id, when,
                   t, msg);
    }
}

/* The failing sample, the states and the schedule, on stderr. */
static void debug_dump(const world *wd, const fp_sample *sm, int rc, const char *errmsg)
{
    fprintf(stderr, "sample: %d (%s)\n", rc, errmsg);
    for (size_t i = 0; i < fp_sample_get_thread_count(sm); i++) {
        const fp_thread *th = fp_sample_get_thread(sm, i);
        fprintf(stderr, "  thread %zu: ids %llu/%llu main %d error %d, %zu frames\n", i,
                (unsigned long long)th->native_id, (unsigned long long)th->thread_id, th->main, th->error,
                th->frame_count);
        for (size_t j = 0; j < th->frame_count; j++) {
            const fp_frame *f = fp_sample_get_frame(sm, th->first_frame + j);
            fprintf(stderr, "    %s line %d unit %d at 0x%llx\n", f->function, f->line, f->instr_offset,
                    (unsigned long long)f->frame_addr);
        }
    }
    for (size_t t = 0; t < wd->d.desc.nthreads; t++)
        for (size_t k = 0; k < wd->nstates[t]; k++) {
            const state *st = &wd->states[t][k];
            fprintf(stderr, "  described thread %zu, state %zu%s: %s, ids %llu/%llu, %zu frames\n", t, k,
                    k <= wd->reached[t] ? " (reached)" : "", st->absent ? "out of the list" : "listed",
                    (unsigned long long)st->native_id, (unsigned long long)st->thread_id, st->n);
            for (size_t j = 0; j < st->n; j++)
                fprintf(stderr, "    %s unit %d\n", st->frames[j].code->qualname, st->frames[j].unit);
        }
    for (size_t q = 0; q < wd->nsched; q++) {
        const scheduled *sc = &wd->sched[q];
        fprintf(stderr, "  write %zu%s: thread %zu, 0x%llx = 0x%llx%s, read %u split %u\n", q,
                q < wd->applied ? " (landed)" : "", sc->thread, (unsigned long long)sc->w.addr,
                (unsigned long long)sc->w.value, sc->w.new_state ? " (visible)" : "", sc->read, sc->split);
    }
}

/* The thread (index) whose reached states include th's ids and stack, or
 * SIZE_MAX; msg: the last difference seen. */
static size_t match_thread(const world *wd, const fp_sample *sm, const fp_thread *th, char *msg, size_t msglen)
{
    for (size_t t = 0; t < wd->d.desc.nthreads; t++) {
        if (th->main != wd->d.threads[t].main)
            continue;
        for (size_t k = 0; k <= wd->reached[t]; k++) {
            const state *s = &wd->states[t][k];
            if (!s->absent && s->native_id == th->native_id && s->thread_id == th->thread_id &&
                fz_thread_equals(sm, th, s->frames, s->n, msg, msglen))
                return t;
        }
    }
    return SIZE_MAX;
}

static void check_moving(const char *id, const world *wd, const fp_sample *sm, int rc, const char *errmsg)
{
    FUZZ_CHECK(rc == FP_OK || rc == FP_E_INCOMPLETE, "%s: sample while moving failed with %d, not as torn: %s",
               id, rc, errmsg);
    bool seen[FZ_MAX_THREADS] = {false};
    for (size_t i = 0; i < fp_sample_get_thread_count(sm); i++) {
        const fp_thread *th = fp_sample_get_thread(sm, i);
        if (th->error) {
            /* The thread's last attempt may have followed a torn pointer
             * out of the mapped memory or into bytes that are no object:
             * it says so, and the sample is torn. */
            FUZZ_CHECK(rc == FP_E_INCOMPLETE && th->frame_count == 0 &&
                           (th->error == FP_E_INCOMPLETE || th->error == FP_E_READ || th->error == FP_E_CORRUPT),
                       "%s: moving: thread %zu (native id %llu) failed with %d (sample %d)", id, i,
                       (unsigned long long)th->native_id, th->error, rc);
            continue;
        }
        char msg[512] = "";
        size_t t = match_thread(wd, sm, th, msg, sizeof msg);
        if (t == SIZE_MAX && getenv(DEBUG_ENV))
            debug_dump(wd, sm, rc, errmsg);
        FUZZ_CHECK(t != SIZE_MAX,
                   "%s: moving: thread %zu (native id %llu) returned a stack no thread had under its ids (last: %s)",
                   id, i, (unsigned long long)th->native_id, msg);
        /* A walk the list changed under may visit a state twice; it is torn. */
        if (seen[t] && rc == FP_OK && getenv(DEBUG_ENV))
            debug_dump(wd, sm, rc, errmsg);
        FUZZ_CHECK(!seen[t] || rc == FP_E_INCOMPLETE, "%s: moving: thread %zu twice in a good sample", id, t);
        seen[t] = true;
    }
    if (rc != FP_OK)
        return;
    for (size_t t = 0; t < wd->d.desc.nthreads; t++) {
        bool throughout = true;
        for (size_t k = 0; k <= wd->reached[t]; k++)
            throughout &= !wd->states[t][k].absent;
        FUZZ_CHECK(seen[t] || !throughout, "%s: moving: thread %zu, in the list all along, missing from a good sample",
                   id, t);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_cursor c = {data, size, 0};
    const char *id = fz_next_layout(&c);
    uint8_t *table = NULL;
    world *wd = calloc(1, sizeof *wd);
    synth_write *w = calloc(MAX_WRITES, sizeof *w);
    size_t *thread_of = calloc(MAX_WRITES, sizeof *thread_of);
    fp_session *s = NULL;
    fp_sample *sm = NULL;
    if (!wd || !w || !thread_of)
        goto out;
    fpi_layout probe;
    if (!fz_layout_table(id, &table, &probe))
        goto out;
    wd->tlbc = probe.co_tlbc != FPI_OFF_NONE;
    fz_decode_description(&c, id, wd->tlbc, &wd->d);
    wd->d.desc.codes = wd->d.codes;
    wd->d.desc.ncodes = wd->d.ncodes;
    uint8_t flags = fz_next_byte(&c);

    char err[512];
    if (synth_build(id, table, FPI_DEBUG_OFFSETS_READ, &wd->d.desc, &wd->img, err, sizeof err) != 0)
        goto out; /* a description the builder cannot lay out */
    for (size_t t = 0; t < wd->d.desc.nthreads; t++) {
        wd->states[t][0].n = wd->d.threads[t].nframes;
        wd->states[t][0].native_id = wd->d.threads[t].native_id;
        wd->states[t][0].thread_id = wd->d.threads[t].thread_id;
        wd->order[t] = t;
        memcpy(wd->states[t][0].frames, wd->d.frames[t], wd->states[t][0].n * sizeof(synth_frame));
        wd->nstates[t] = 1;
    }
    wd->norder = wd->initial_order = wd->d.desc.nthreads;

    /* The moves and their schedule. */
    size_t nmoves = fz_next_byte(&c) % (MAX_MOVES + 1), nw = 0;
    for (size_t m = 0; m < nmoves; m++)
        plan_move(wd, &c, w, &nw, thread_of);
    uint32_t read = 1 + fz_next_byte(&c) % MAX_READ_GAP;
    for (size_t i = 0; i < nw; i++) {
        uint8_t g = fz_next_byte(&c);
        read += g % MAX_READ_GAP;
        wd->sched[i] = (scheduled){w[i], thread_of[i], read, (uint32_t)(g / MAX_READ_GAP) % SPLIT_STEPS};
    }
    wd->nsched = nw;

    fp_options o;
    fp_options_init(&o);
    o.max_depth = FZ_MAX_NAMED_DEPTH;
    o.cache_frames = !(flags & FLAG_NO_FRAME_CACHE);
    if (fp_session_new(&o, &s) || fp_sample_new(&sm))
        goto out;
    synth_reader(wd->img, &wd->inner);
    fp_reader rd = {.ops = &live_ops, .ctx = wd};
    fp_target_desc td;
    synth_target(wd->img, &td);
    int rc = fp_session_attach_reader(s, &rd, &td);
    FUZZ_CHECK(rc == FP_OK, "%s: attach failed: %s", id, fp_session_get_errmsg(s));
    if (flags & FLAG_RETRY_HOOK) {
        wd->hook_lands = flags & FLAG_HOOK_LANDS;
        FUZZ_CHECK(fp_session_set_retry_hook(s, on_retry, wd) == FP_OK, "%s: the retry hook refused", id);
    }

    /* The writes land as planned; the states are what they make visible. */
    for (size_t t = 0; t < wd->d.desc.nthreads; t++) {
        size_t made = 0;
        for (size_t i = 0; i < nw; i++)
            made += thread_of[i] == t && w[i].new_state;
        FUZZ_CHECK(made + 1 == wd->nstates[t], "%s: thread %zu: %zu visible changes planned, %zu states", id, t, made,
                   wd->nstates[t]);
    }

    for (int k = 0; k < ((flags & FLAG_READ_BACKS_AHEAD) ? 2 : 1); k++) {
        rc = sample_once(id, wd, s, sm, false);
        check_still(id, wd, sm, rc, fp_session_get_errmsg(s), false);
    }

    wd->trace_reads = getenv(DEBUG_ENV) != NULL;
    wd->armed = true;
    rc = sample_once(id, wd, s, sm, true);
    wd->armed = false;
    check_moving(id, wd, sm, rc, fp_session_get_errmsg(s));

    while (wd->applied < wd->nsched)
        land(wd);
    for (int k = 0; k < FINAL_SAMPLES; k++) {
        rc = sample_once(id, wd, s, sm, k == 0);
        check_still(id, wd, sm, rc, fp_session_get_errmsg(s), true);
    }
out:
    fp_sample_free(sm);
    fp_session_free(s);
    if (wd)
        synth_free(wd->img);
    free(table);
    free(thread_of);
    free(w);
    free(wd);
    return 0;
}
