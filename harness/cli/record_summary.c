/* record_summary.c — the summary `frameproof record` writes on stderr at
 * the end of a run: in plain words, what was kept, what was lost and why,
 * what that means for the profile, and the top functions. */
#include <inttypes.h>
#include <stdio.h>

#include "record_cli.h"
#include "spawn.h"

static double share(uint64_t part, uint64_t whole)
{
    return whole ? (double)part / (double)whole : 0.0;
}

/* The first line: how long and until what. */
static void summarize_end(const cli_record_opts *o, const cli_record_end *e)
{
    char why[2 * RECORD_LABEL_MAX] = "";
    char words[RECORD_LABEL_MAX] = "";
    if (e->child_ended)
        cf_describe_status(e->child_status, words, sizeof words);
    if (e->rc == FP_E_PROCESS_GONE)
        snprintf(why, sizeof why, "until the target exited%s%s%s", words[0] ? " (" : "", words, words[0] ? ")" : "");
    else if (e->rc != FP_OK)
        snprintf(why, sizeof why, "until an error stopped it");
    else if (e->st->stop_reason == FPS_STOP_DURATION)
        snprintf(why, sizeof why, "for --duration%s%s", words[0] ? "; the command, still running, was ended: " : "",
                 words);
    else if (e->r->oom || e->r->write_failed)
        snprintf(why, sizeof why, "until it had to stop (above)");
    else
        snprintf(why, sizeof why, "until interrupted%s%s", words[0] ? "; the command: " : "", words);
    fprintf(stderr, "frameproof record: sampled %.2f s of %s (%s mode), %s\n", e->st->elapsed_s,
            o->command ? "the command" : "the process", fpr_mode_name(o->mode), why);
}

/* Errors other than torn samples and the target's exit: rare, each named. */
static void summarize_errors(const cli_record_end *e)
{
    bool any = false;
    for (int k = 1; k < FPS_ERROR_SLOTS; k++) {
        uint64_t n = e->st->by_error[k];
        if (-k == FP_E_PROCESS_GONE && e->rc == FP_E_PROCESS_GONE)
            n--; /* the target's exit, which ended the run: no error */
        if (-k == FP_E_INCOMPLETE || !n)
            continue;
        fprintf(stderr, "%s %s: %" PRIu64 " (%s)", any ? "," : "  errors:", fp_error_describe(-k), n,
                fps_classify(-k) == FPS_TRANSIENT ? "sample refused, the next tick sampled" : "sampling stopped");
        any = true;
    }
    if (any)
        fputc('\n', stderr);
}

/* Samples walked again and threads stopped: the sampling policy at work. */
static void summarize_rereads(const cli_record_opts *o, const cli_record_end *e)
{
    fprintf(stderr, "  threads walked again after the target changed under them: %" PRIu64, e->run->torn_walks);
    if (o->sampling.colocate_pid > 0)
        fprintf(stderr,
                "; threads walked again from their own CPU: %" PRIu64 "; left to finish an update of their own: %" PRIu64,
                e->st->colocate_retry_follows, e->st->colocate_escapes);
    if (o->lib.pause_torn)
        fprintf(stderr, "; threads stopped briefly to read them exactly: %" PRIu64, e->run->paused_walks);
    fputc('\n', stderr);
    if (o->sampling.colocate_pid > 0)
        fprintf(stderr,
                "  sampler moved to the CPU of the target's running thread: %" PRIu64 " moves (that CPU unknown on %" PRIu64
                " ticks)%s",
                e->st->colocate_moves, e->st->colocate_unknown, o->sampling.hold ? "" : "\n");
    if (o->sampling.colocate_pid > 0 && o->sampling.hold)
        fprintf(stderr, "; that thread held there while read on %" PRIu64 " ticks (refused by the kernel on %" PRIu64 ")\n",
                e->st->colocate_holds, e->st->colocate_hold_refused);
    if (e->st->colocate_unguarded)
        fprintf(stderr,
                "  warning: %" PRIu64 " holds had no guard to give the thread its CPU affinity back had frameproof "
                "died mid-hold (%s)\n",
                e->st->colocate_unguarded, e->st->colocate_guard_error);
    if (o->policy.realtime_refused[0])
        fprintf(stderr,
                "  note: real-time priority was refused (%s), so a held thread could take the sampler's CPU back "
                "in the middle of a read: samples run longer and more ticks are missed; root or CAP_SYS_NICE "
                "avoids it\n",
                o->policy.realtime_refused);
}

/* The one line on what the losses mean for the profile. */
static void summarize_verdict(const cli_record_opts *o, const cli_record_end *e, uint64_t ticks, uint64_t refused)
{
    const fpr_dropped *d = fpr_profile_dropped(e->p);
    const uint64_t kept = fpr_profile_points(e->p);
    const double lost = share(e->st->missed_ticks + refused, ticks), missed = share(e->st->missed_ticks, ticks);
    const double torn = share(refused, ticks), torn_threads = share(d->torn_threads, kept + d->torn_threads);
    /* --async: a running task whose thread's walk failed is a task stack left out */
    const uint64_t unwalked = o->async ? e->r->async->counts.failed_threads : 0;
    const double unwalked_share = share(unwalked, kept + unwalked);
    const double deep = share(d->deep_threads, kept + d->deep_threads);
    if (deep >= RECORD_LOSS_NOTE)
        fprintf(stderr,
                "  warning: %.1f %% of thread samples lost because the thread was deeper than --max-depth %u frames: "
                "the time of those threads is missing from the profile; raise --max-depth\n",
                100.0 * deep, o->lib.max_depth);
    else if (torn >= RECORD_LOSS_NOTE || torn_threads >= RECORD_LOSS_NOTE)
        fprintf(stderr,
                "  warning: %.1f %% of ticks refused and %.1f %% of thread samples lost because the target changed while "
                "they were read (a sample takes %.1f us): stacks that last about that long or less are "
                "under-represented; %s\n",
                100.0 * torn, 100.0 * torn_threads, e->run->mean_sample_us,
                o->sampling.colocate_pid > 0 && o->lib.pause_torn
                    ? "--blocking reads every thread exactly, pausing the target for each sample"
                    : "the default sampling (without --no-colocate and --no-pause-torn) or --blocking avoids it");
    else if (missed >= RECORD_LOSS_NOTE)
        fprintf(stderr,
                "  warning: %.1f %% of ticks missed: samples took longer than the %.3g ms between ticks, so the profile "
                "has fewer samples than asked for and those after the slowest samples are missing; lower --rate%s\n",
                100.0 * missed, 1e3 / o->sampling.rate_hz, o->sampling.realtime ? "" : ", or --realtime on a busy machine");
    else if (unwalked_share >= RECORD_LOSS_NOTE)
        fprintf(stderr,
                "  warning: %.1f %% of task stacks lost because their thread's stack could not be walked: the tasks "
                "those threads ran are under-represented; see the \"lost:\" line below\n",
                100.0 * unwalked_share);
    else if (unwalked)
        fprintf(stderr,
                "  lost %.1f %% of ticks (missed or refused), %.1f %% of thread samples (torn) and %.1f %% of task "
                "stacks (their thread not walked): too few to bias the profile\n",
                100.0 * lost, 100.0 * torn_threads, 100.0 * unwalked_share);
    else
        fprintf(stderr,
                "  lost %.1f %% of ticks (missed or refused) and %.1f %% of thread samples (torn): too few to bias the "
                "profile\n",
                100.0 * lost, 100.0 * torn_threads);
}

/* The share of kept thread samples of threads off a CPU, and the threads
 * that were mostly so. */
static void summarize_idle(const cli_record_end *e)
{
    const fpr_idle_counts *c = fpr_idle_totals(e->r->idle);
    if (!c->checked)
        return;
    fprintf(stderr,
            "  off CPU: %.1f %% of the kept thread samples (checked: %" PRIu64 " of %" PRIu64 ") were of threads waiting "
            "(sleep, I/O, a lock, the GIL); --mode cpu leaves them out\n",
            100.0 * share(c->off_cpu, c->checked), c->checked, c->checked + c->unknown + c->unchecked);
    int named = 0;
    for (size_t i = 0; i < fpr_profile_thread_count(e->p) && named < RECORD_WAITING_NAMED; i++) {
        uint64_t checked, off;
        fpr_idle_thread(e->r->idle, i, &checked, &off);
        if (!checked || share(off, checked) < RECORD_MOSTLY_WAITING)
            continue;
        char label[RECORD_LABEL_MAX];
        fpr_thread_label(fpr_profile_thread(e->p, i), label, sizeof label);
        fprintf(stderr, "%s %s %.0f %%", named++ ? "," : "    mostly waiting:", label, 100.0 * share(off, checked));
    }
    if (named)
        fputc('\n', stderr);
}

/* The top functions: self (the sample's innermost frame is theirs) and
 * total (anywhere on its stack, once per sample). */
static void summarize_top(const fpr_top *t)
{
    if (!t->count)
        return;
    fprintf(stderr,
            "  top %zu of %zu functions, of %" PRIu64 " thread samples (self: the innermost frame; total: anywhere on "
            "the stack)\n      self    total  function (file:line with the most self samples)\n",
            t->count, t->functions, t->samples);
    for (size_t i = 0; i < t->count; i++) {
        const fpr_top_entry *f = &t->top[i];
        fprintf(stderr, "    %5.1f %%  %5.1f %%  %s (%s", 100.0 * share(f->self, t->samples),
                100.0 * share(f->total, t->samples), f->function, f->file);
        if (f->line != FP_POS_NONE)
            fprintf(stderr, ":%" PRId32, f->line);
        fputs(")\n", stderr);
    }
}

/* The summary on stderr: how the run ended, the ticks and samples, what
 * was lost and why, what that means, threads off a CPU, the top
 * functions.  Where the profile went follows it (cli_record_write_profile). */
void cli_record_summarize(const cli_record_opts *o, const cli_record_end *e, const fpr_top *top)
{
    const fps_stats *st = e->st;
    const fpr_dropped *d = fpr_profile_dropped(e->p);
    const uint64_t ticks = st->attempts + st->missed_ticks;
    /* Transient failures with no usable sample (the partial ones are all FP_E_INCOMPLETE). */
    const uint64_t partial = e->r->partial, torn_attempts = st->by_error[-FP_E_INCOMPLETE];
    const uint64_t refused = st->transient > partial ? st->transient - partial : 0;
    const uint64_t refused_torn = torn_attempts > partial ? torn_attempts - partial : 0;
    summarize_end(o, e);
    fprintf(stderr,
            "  ticks: %" PRIu64 " scheduled, %" PRIu64 " sampled: %.1f Hz achieved of %g requested, %" PRIu64
            " missed (%.2f %%)%s\n",
            ticks, st->attempts, st->achieved_rate_hz, o->sampling.rate_hz, st->missed_ticks,
            100.0 * share(st->missed_ticks, ticks),
            st->missed_ticks ? ": the sampler was late (a slow sample overran them; never caught up)" : "");
    if (o->sampling.target_time)
        fprintf(stderr,
                "  ticks spaced in the target's own time: the samples held it still %.3f s of the %.2f s (%.2f %%),"
                " by which the ticks after them came later\n",
                st->held_s, st->elapsed_s, st->elapsed_s > 0 ? 100.0 * st->held_s / st->elapsed_s : 0.0);
    fprintf(stderr,
            "  samples: %" PRIu64 " taken whole, %" PRIu64 " with some threads not walked (torn, or deeper than --max-depth), %" PRIu64
            " refused as torn (the target changed while they were read); a sample takes %.1f us on average\n",
            st->ok, e->r->partial, refused_torn, e->run->mean_sample_us);
    fprintf(stderr, "  thread samples kept: %" PRIu64 " in %zu threads\n", fpr_profile_points(e->p),
            fpr_profile_thread_count(e->p));
    fprintf(stderr,
            "  thread samples lost: %" PRIu64 " torn threads, %" PRIu64 " threads with no Python frame, %" PRIu64
            " threads not counted by --mode %s%s",
            d->torn_threads, d->idle_threads, d->mode_threads, fpr_mode_name(o->mode),
            o->mode == FPR_MODE_CPU ? " (off a CPU)" : o->mode == FPR_MODE_GIL ? " (not holding the GIL)" : "");
    if (d->unknown_state)
        fprintf(stderr, " (%" PRIu64 " of them in an unknown state)", d->unknown_state);
    if (d->deep_threads)
        fprintf(stderr, ", %" PRIu64 " threads deeper than --max-depth %u (raise it to keep them)", d->deep_threads,
                o->lib.max_depth);
    fputc('\n', stderr);
    summarize_errors(e);
    summarize_rereads(o, e);
    summarize_verdict(o, e, ticks, refused);
    if (e->r->idle)
        summarize_idle(e);
    if (o->sampling.realtime && share(st->missed_ticks, ticks) >= RECORD_REALTIME_MISSED_NOTE)
        fprintf(stderr,
                "  note: --realtime could not hold %g Hz: the sampler ran without a pause at real-time\n"
                "  priority, taking its CPU from everything else on it up to the kernel's real-time\n"
                "  limit (sched_rt_runtime_us); a rate it holds leaves that CPU free between ticks\n",
                o->sampling.rate_hz);
    if (o->async)
        cli_record_async_summarize(o, e->r->async);
    summarize_top(top);
}

