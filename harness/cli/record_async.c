/* record_async.c — `frameproof record --async`: each attempt reads the
 * target's asyncio task graph and every thread's stack at one instant
 * (fp_async_graph_read_sample, the target stopped for the read), and the
 * profile gets task stacks joined through their awaiters
 * (harness/record/async_stacks.h). */
#include <inttypes.h>
#include <stdio.h>

#include "record_cli.h"

int cli_record_async_take(void *ctx, fp_session *s, fp_sample *sm)
{
    cli_record_async *a = ctx;
    if (a->fault == CLI_ASYNC_FAULT_STALE_AWAITER) {
        if (a->graph) {
            fp_async_graph_free(a->prev);
            a->prev = a->graph;
        }
    } else
        fp_async_graph_free(a->graph);
    a->graph = NULL;
    int rc = fp_async_graph_read_sample(s, sm, &a->graph);
    if (rc == FP_OK && !a->thread_error[0] && fp_session_get_errmsg(s)[0])
        snprintf(a->thread_error, sizeof a->thread_error, "%s", fp_session_get_errmsg(s)); /* a thread's walk failed */
    if (rc == FP_OK) {
        uint64_t ns = fp_async_graph_get_stopped_ns(a->graph);
        a->stopped_ns += ns;
        if (ns > a->max_stopped_ns)
            a->max_stopped_ns = ns;
    }
    return rc;
}

int cli_record_async_policy(cli_record_opts *o)
{
    cli_policy *p = &o->policy; /* its --hold/--no-colocate clash is cli_policy_apply's */
    const char *clash = NULL;
    if (p->blocking || p->pause_torn == CLI_POLICY_ON)
        clash = "--async stops every thread for each read: not with --blocking or --pause-torn";
    else if (p->fault != FPS_FAULT_NONE)
        clash = "--async reads stopped targets: its faults are stale-awaiter and no-task-step, not drop-torn or retry-quiet";
    else if (o->mode != FPR_MODE_WALL)
        clash = "--async samples tasks, not threads: not with --mode cpu or gil";
    if (clash) {
        fprintf(stderr, "frameproof record: %s\n", clash);
        return -1;
    }
    /* The default policy's colocation, hold and real-time priority, as for
     * --blocking: a stop asked of a thread running on another CPU lands
     * later, at once if it enters the kernel meanwhile, which over-weights
     * stacks that make system calls; the running thread held on the
     * sampler's CPU, preempted there at the tick, stops where the tick
     * found it. */
    if (cli_policy_apply("record", p, &o->lib, &o->sampling))
        return -1;
    o->lib.pause_torn = false;    /* the graph read stops the target itself, and walks the threads meanwhile */
    o->sampling.offload = false;  /* the callback reads the attempt's graph */
    o->sampling.target_time = true; /* ticks spaced in the target's running time, also with --no-colocate */
    return 0;
}

void cli_record_async_free(cli_record_async *a)
{
    fp_async_graph_free(a->graph);
    fp_async_graph_free(a->prev);
    fpr_async_buf_free(&a->buf);
    *a = (cli_record_async){0};
}

void cli_record_async_summarize(const cli_record_opts *o, const cli_record_async *a)
{
    const fpr_async_counts *c = &a->counts;
    fprintf(stderr,
            "  asyncio (--async-mode %s): %" PRIu64 " graph reads gave %" PRIu64
            " task stacks; the target was stopped %.3f s for them (%.2f ms a read on average, %.2f ms at most)\n",
            fpr_async_mode_name(o->async_mode), c->reads, c->task_stacks, (double)a->stopped_ns / 1e9,
            c->reads ? (double)a->stopped_ns / 1e6 / (double)c->reads : 0.0, (double)a->max_stopped_ns / 1e6);
    if (o->async_mode == FPR_ASYNC_RUNNING)
        fprintf(stderr, "  threads running no task, left out: %" PRIu64 " thread samples (--async-mode all counts "
                        "suspended tasks too)\n", c->idle_threads);
    if (c->no_asyncio)
        fprintf(stderr, "  note: on %" PRIu64 " reads the target had not imported asyncio (3.14+: its C module; "
                        "before: asyncio.tasks): no tasks\n",
                c->no_asyncio);
    if (c->cut_chains)
        fprintf(stderr, "  note: %" PRIu64 " chains of awaiters came back to a task already on their stack and were "
                        "cut there\n", c->cut_chains);
    if (c->failed_threads)
        fprintf(stderr, "  lost: %" PRIu64 " running tasks whose thread's stack could not be walked (%s)\n",
                c->failed_threads, a->thread_error[0] ? a->thread_error : "no reason kept");
    if (a->fault == CLI_ASYNC_FAULT_STALE_AWAITER)
        fputs("  self-test fault: task stacks joined through the previous read's awaiter edges\n", stderr);
    if (a->fault == CLI_ASYNC_FAULT_NO_TASK_STEP)
        fputs("  self-test fault: tasks being stepped shown without <task step>, as if their waiting frame ran\n",
              stderr);
}
