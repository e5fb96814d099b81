/* cmd_record.c — `frameproof record`: sample a running process (--pid) or
 * a command it launches (-- COMMAND ...) at a rate, for a duration or until
 * the target exits or Ctrl-C, and write the profile in one of the formats
 * of harness/record.  Options and the sampling run are here; the launched
 * command, the output and the summary are in record_*.c (record_cli.h). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "interrupt.h"
#include "record_cli.h"

static const char RECORD_USAGE[] =
    "usage: frameproof record (--pid PID | -- COMMAND [ARG...]) [--rate HZ] [--duration S]\n"
    "                         [--poisson [--seed N]] [--mode wall|cpu|gil]\n"
    "                         [--format collapsed|speedscope|json|gecko] [-o FILE]\n"
    "                         [--blocking | --no-colocate | --no-hold | --no-pause-torn]\n"
    "                         [--inject-fault drop-torn|retry-quiet|stale-awaiter|no-task-step]\n"
    "                         [--[no-]realtime]\n"
    "                         [--async [--async-mode running|all]]\n"
    "                         [--reader auto|vm|mem] [--max-depth N] [--no-progress]\n"
    "                         [--allow-untested-version]\n"
    "\n"
    "Samples the Python stacks of every thread of a process as a profiler and\n"
    "writes the profile.  With --pid it attaches to a running process; with\n"
    "-- COMMAND it launches COMMAND (a Python interpreter, directly or through\n"
    "exec, e.g. `chroot ROOT python3.X`) and profiles it until it exits.\n"
    "\n"
    "  --pid PID        process to profile\n"
    "  --rate HZ        samples per second on a fixed schedule (default "
    RECORD_XSTR(RECORD_DEFAULT_RATE_HZ) ", at most\n"
    "                   " RECORD_XSTR(RECORD_MAX_RATE_HZ) "); a tick that a slow sample overran is skipped\n"
    "                   and counted as missed, never caught up\n"
    "  --duration S     stop after S seconds (default: until the target exits or\n"
    "                   Ctrl-C); a launched command still running then gets\n"
    "                   SIGTERM, and SIGKILL 2 s later\n"
    "  --poisson        exponentially distributed gaps of mean 1/HZ instead of a\n"
    "                   fixed period (no aliasing with periodic work)\n"
    "  --seed N         seed of the Poisson gaps (default 0: equal seeds, equal schedules)\n"
    "  --mode MODE      which threads a sample counts: wall (default: every thread\n"
    "                   with a Python frame), cpu (threads the kernel shows on a\n"
    "                   CPU), gil (the thread holding the GIL; refused on a\n"
    "                   free-threaded build)\n"
    "  --format FMT     collapsed (default; folded stacks for flamegraph.pl and\n"
    "                   speedscope), speedscope (speedscope's JSON file format),\n"
    "                   json (JSON Lines records for tools, streamed: each\n"
    "                   sample's records as it is taken) or gecko (the Firefox\n"
    "                   Profiler's processed format); see docs/record-formats.md\n"
    "  -o, --output F   write the profile to F, - for standard output (default:\n"
    "                   with -- COMMAND, frameproof-PID.EXT in the current\n"
    "                   directory, PID the command's and EXT txt, speedscope.json,\n"
    "                   jsonl or gecko.json by format, so that the profile is\n"
    "                   never mixed with the command's own output; with --pid,\n"
    "                   standard output); F is opened before the command runs or\n"
    "                   the target is attached, and an existing F is only\n"
    "                   replaced once the profile is written\n";

/* The flags after the policy's (one string would pass the 4095
 * characters C11 compilers must take). */
static const char RECORD_USAGE_FLAGS[] =
    "  --async          asyncio task stacks instead of thread stacks (CPython\n"
    "                   3.11+): each tick reads the task graph and every\n"
    "                   thread's stack with the target stopped (as --blocking, its\n"
    "                   running thread held on the sampler's CPU unless --no-hold;\n"
    "                   the summary says for how long), and a task's stack is its own\n"
    "                   frames, a <task> frame named after it, then the stack of\n"
    "                   the task awaiting it, up to a task nothing awaits\n"
    "  --async-mode M   running (default: the task each thread runs at the tick)\n"
    "                   or all (also every suspended task no task awaits)\n"
    "  --inject-fault stale-awaiter  (with --async) a self-test fault: join task\n"
    "                   stacks through the previous read's awaiter edges\n"
    "  --inject-fault no-task-step  (with --async) a self-test fault: a task being\n"
    "                   stepped gets no <task step> frame, so the function it\n"
    "                   waits in takes that time as if it ran\n"
    "  --reader KIND    memory reader: auto, vm or mem (default auto)\n"
    "  --max-depth N    frames per thread before its walk fails: a deeper thread's\n"
    "                   samples are left out and counted, the others kept (default 65536)\n"
    "  --no-progress    no progress line (it is shown only when stderr is a terminal)\n"
    CLI_UNTESTED_HELP
    "  --help           print this help\n";

/* The rest of the help. */
static const char RECORD_USAGE_END[] =
    "\n"
    "A sample that the target changed under (torn) is counted and left out,\n"
    "never guessed.  At the end stderr gets a summary: the ticks scheduled,\n"
    "sampled and missed, the thread samples kept, what was lost and why\n"
    "(missed ticks, samples refused as torn, torn threads, threads with no\n"
    "Python frame, threads the mode does not count), one line on what the\n"
    "losses mean for the profile, in wall and gil mode the share of kept\n"
    "samples of threads that were off a CPU (waiting: --mode cpu leaves them\n"
    "out), the top functions by self samples with their total share, and\n"
    "where the profile was written.  Ctrl-C (SIGINT) or SIGTERM stops\n"
    "sampling and still writes the profile.\n"
    "\n"
    "Exit status: 0 when the profile was written and sampling ended on its\n"
    "duration, Ctrl-C or the target's exit; 1 on an error (attach failed, a\n"
    "fatal sampling error, the output could not be written); 2 on a usage error.\n";

static void print_usage(FILE *f)
{
    fputs(RECORD_USAGE, f);
    fputs(CLI_POLICY_HELP, f);
    fputs(RECORD_USAGE_FLAGS, f);
    fputs(RECORD_USAGE_END, f);
}

/* Names a thread from /proc/PID/task/TID/comm (the name the target gave
 * it, e.g. by threading on 3.14+; else the program's name). */
static void name_thread(void *ctx, uint64_t native_id, char *buf, size_t size)
{
    int pid = *(const int *)ctx;
    char path[RECORD_COMM_PATH_MAX];
    buf[0] = '\0';
    snprintf(path, sizeof path, "/proc/%d/task/%" PRIu64 "/comm", pid, native_id);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(buf, (int)size, f))
        buf[strcspn(buf, "\n")] = '\0';
    else
        buf[0] = '\0';
    fclose(f);
}

static void progress(cli_record_run *r, int64_t t_ns, bool final)
{
    double s = (double)t_ns / (double)RECORD_NS_PER_S;
    fprintf(stderr, "\r  %.1f s  %" PRIu64 " samples  %.1f Hz  %" PRIu64 " errors ", s, r->ok,
            s > 0 ? (double)r->attempts / s : 0.0, r->errors);
    if (final)
        fputc('\n', stderr);
    fflush(stderr);
}

/* Adds attempt o's sample to p; a thread the run leaves out as torn
 * (fps_outcome.skip_ids, a self-test fault) is counted as a torn one. */
static int add_sample(fpr_profile *p, const fps_outcome *o)
{
    if (o->nskip == 0)
        return fpr_profile_add(p, o->sample, o->t_ns);
    size_t n = fp_sample_get_thread_count(o->sample);
    for (size_t i = 0; i < n; i++) {
        fp_thread th = *fp_sample_get_thread(o->sample, i);
        for (size_t k = 0; k < o->nskip; k++)
            if (o->skip_ids[k] == th.native_id)
                th.error = FP_E_INCOMPLETE;
        const fp_frame *frames = th.frame_count ? fp_sample_get_frame(o->sample, th.first_frame) : NULL;
        int rc = fpr_profile_add_thread(p, &th, frames, o->t_ns);
        if (rc)
            return rc;
    }
    return FP_OK;
}

static int on_sample(void *ctx, const fps_outcome *o)
{
    cli_record_run *r = ctx;
    r->attempts++;
    r->cost_ns += o->cost_ns;
    if (o->rc == FP_OK)
        r->ok++;
    else
        r->errors++;
    if (o->rc != FP_OK && o->sample)
        r->partial++;
    if (r->async) {
        cli_record_async *a = r->async;
        fpr_async_view v = {.mode = r->async_mode,
                            .edges = a->fault == CLI_ASYNC_FAULT_STALE_AWAITER ? a->prev : NULL,
                            .no_task_step = a->fault == CLI_ASYNC_FAULT_NO_TASK_STEP};
        if (o->rc == FP_OK && a->graph &&
            fpr_async_add(r->profile, a->graph, o->sample, &v, o->t_ns, &a->buf, &a->counts) != FP_OK) {
            r->oom = true;
            return 1;
        }
    } else if (o->sample && add_sample(r->profile, o) != FP_OK) {
        r->oom = true;
        return 1;
    }
    if (o->sample && r->idle && fpr_idle_check(r->idle, r->profile, o->t_ns) != FP_OK) {
        r->oom = true;
        return 1;
    }
    if (o->sample && r->stream && fpr_json_stream_sample(r->stream, r->profile) != 0) {
        r->write_failed = true;
        r->write_errno = errno;
        return 1;
    }
    if (r->show_progress && o->t_ns >= r->next_progress_ns) {
        progress(r, o->t_ns, false);
        r->next_progress_ns = o->t_ns + RECORD_PROGRESS_NS;
    }
    return cf_interrupted() ? 1 : 0;
}

/* 0, 1 for --help, -1 on a usage error. */
static int parse_args(int argc, char **argv, cli_record_opts *o)
{
    static const struct option opts[] = {
        {"pid", required_argument, NULL, 'p'},
        {"rate", required_argument, NULL, 'R'},
        {"duration", required_argument, NULL, 'D'},
        {"poisson", no_argument, NULL, 'P'},
        {"seed", required_argument, NULL, 'S'},
        {"mode", required_argument, NULL, 'm'},
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"blocking", no_argument, NULL, 'B'},
        {"pause-torn", no_argument, NULL, 'T'},
        {"no-pause-torn", no_argument, NULL, 't'},
        {"realtime", no_argument, NULL, 'X'},
        {"no-realtime", no_argument, NULL, 'x'},
        {"colocate", no_argument, NULL, 'L'},
        {"no-colocate", no_argument, NULL, 'l'},
        {"hold", no_argument, NULL, 'H'},
        {"no-hold", no_argument, NULL, 'k'},
        {"inject-fault", required_argument, NULL, 'I'},
        {"reader", required_argument, NULL, 'r'},
        {"max-depth", required_argument, NULL, 'd'},
        {"no-progress", no_argument, NULL, 'N'},
        {"allow-untested-version", no_argument, NULL, 'U'},
        {"async", no_argument, NULL, 'A'},
        {"async-mode", required_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned long v;
    int c;
    bool seed = false, async_mode = false;
    optind = 1;
    /* '+': stop at the first non-option, so COMMAND's own options stay its own. */
    while ((c = getopt_long(argc, argv, "+p:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (cli_parse_uint(optarg, INT_MAX, &o->pid) || o->pid == 0) {
                fprintf(stderr, "frameproof record: invalid pid '%s'\n", optarg);
                return -1;
            }
            break;
        case 'R':
            if (cli_parse_positive(optarg, RECORD_MAX_RATE_HZ, &o->sampling.rate_hz)) {
                fprintf(stderr, "frameproof record: --rate must be in (0, %g], not '%s'\n", RECORD_MAX_RATE_HZ, optarg);
                return -1;
            }
            break;
        case 'D':
            if (cli_parse_positive(optarg, RECORD_MAX_DURATION_S, &o->sampling.duration_s)) {
                fprintf(stderr, "frameproof record: --duration must be in (0, %g], not '%s'\n", RECORD_MAX_DURATION_S,
                        optarg);
                return -1;
            }
            break;
        case 'P': o->sampling.poisson = true; break;
        case 'S':
            if (cli_parse_uint(optarg, ULONG_MAX, &v)) {
                fprintf(stderr, "frameproof record: invalid --seed '%s'\n", optarg);
                return -1;
            }
            o->sampling.seed = v;
            seed = true;
            break;
        case 'm':
            if ((o->mode = fpr_mode_parse(optarg)) < 0) {
                fprintf(stderr, "frameproof record: --mode must be wall, cpu or gil, not '%s'\n", optarg);
                return -1;
            }
            break;
        case 'f':
            if ((o->format = fpr_format_parse(optarg)) < 0) {
                fprintf(stderr, "frameproof record: --format must be collapsed, speedscope, json or gecko, not '%s'\n",
                        optarg);
                return -1;
            }
            break;
        case 'o': o->output = optarg; break;
        case 'B': o->policy.blocking = true; break;
        case 'T': o->policy.pause_torn = CLI_POLICY_ON; break;
        case 't': o->policy.pause_torn = CLI_POLICY_OFF; break;
        case 'X': o->policy.realtime = CLI_POLICY_ON; break;
        case 'x': o->policy.realtime = CLI_POLICY_OFF; break;
        case 'L': o->policy.colocate = CLI_POLICY_ON; break;
        case 'l': o->policy.colocate = CLI_POLICY_OFF; break;
        case 'H': o->policy.hold = CLI_POLICY_ON; break;
        case 'k': o->policy.hold = CLI_POLICY_OFF; break;
        case 'I':
            if (strcmp(optarg, "stale-awaiter") == 0)
                o->async_fault = CLI_ASYNC_FAULT_STALE_AWAITER;
            else if (strcmp(optarg, "no-task-step") == 0)
                o->async_fault = CLI_ASYNC_FAULT_NO_TASK_STEP;
            else if (strcmp(optarg, "drop-torn") != 0 && strcmp(optarg, "retry-quiet") != 0) {
                fprintf(stderr, "frameproof record: --inject-fault must be drop-torn, retry-quiet, or with --async "
                                "stale-awaiter or no-task-step, not '%s'\n", optarg);
                return -1;
            } else if (cli_policy_fault("record", optarg, &o->policy))
                return -1;
            break;
        case 'A': o->async = true; break;
        case 'M':
            if ((o->async_mode = fpr_async_mode_parse(optarg)) < 0) {
                fprintf(stderr, "frameproof record: --async-mode must be running or all, not '%s'\n", optarg);
                return -1;
            }
            async_mode = true;
            break;
        case 'r':
            if (cli_parse_reader("record", optarg, 1, &o->lib.reader))
                return -1;
            break;
        case 'd':
            if (cli_parse_uint(optarg, UINT32_MAX, &v) || v == 0) {
                fprintf(stderr, "frameproof record: invalid --max-depth '%s'\n", optarg);
                return -1;
            }
            o->lib.max_depth = (uint32_t)v;
            break;
        case 'N': o->progress = false; break;
        case 'U': o->lib.allow_untested = true; break;
        case 'h': print_usage(stdout); return 1;
        default: print_usage(stderr); return -1;
        }
    }
    if (optind < argc && strcmp(argv[optind - 1], "--") == 0)
        o->command = &argv[optind];
    else if (optind < argc) {
        fprintf(stderr, "frameproof record: unexpected argument '%s' (a command to launch follows --)\n",
                argv[optind]);
        return -1;
    }
    if (!o->pid == !o->command) {
        fputs("frameproof record: give either --pid PID or -- COMMAND\n", stderr);
        print_usage(stderr);
        return -1;
    }
    if ((async_mode || o->async_fault) && !o->async) {
        fprintf(stderr, "frameproof record: %s needs --async\n",
                async_mode ? "--async-mode" : o->async_fault == CLI_ASYNC_FAULT_STALE_AWAITER
                                                  ? "--inject-fault stale-awaiter" : "--inject-fault no-task-step");
        return -1;
    }
    if (o->async ? cli_record_async_policy(o) : cli_policy_apply("record", &o->policy, &o->lib, &o->sampling))
        return -1;
    if (seed && !o->sampling.poisson) {
        fputs("frameproof record: --seed needs --poisson\n", stderr);
        return -1;
    }
    return 0;
}

/* Whether the kernel grants --realtime, asked before anything is launched;
 * false with a one-line error. */
static bool realtime_granted(const cli_record_opts *o)
{
    char msg[FPS_ERRMSG_MAX];
    if (!o->sampling.realtime || fps_realtime_check(msg, sizeof msg) == FP_OK)
        return true;
    fprintf(stderr, "frameproof record: --realtime: %s\n", msg);
    return false;
}

int cli_cmd_record(int argc, char **argv)
{
    cli_record_opts o = {.mode = FPR_MODE_WALL, .format = FPR_FORMAT_COLLAPSED, .progress = true};
    fp_options_init(&o.lib);
    fps_config_init(&o.sampling);
    cli_policy_init(&o.policy);
    o.sampling.rate_hz = RECORD_DEFAULT_RATE_HZ;
    int pr = parse_args(argc, argv, &o);
    if (pr)
        return pr > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (!realtime_granted(&o))
        return CLI_EXIT_ERROR;
    /* Only --mode cpu needs each thread's scheduler state inside the
     * sample: one /proc read per thread and sample, which more than doubles
     * a 16-thread sample's cost.  The other modes read it after the
     * sample, within a time budget (idle.h). */
    o.lib.thread_cpu_state = o.mode == FPR_MODE_CPU;
    if (cf_signal_install() != 0) {
        fputs("frameproof record: cannot install signal handlers\n", stderr);
        return CLI_EXIT_ERROR;
    }
    int status = CLI_EXIT_ERROR, child_status = 0;
    bool child_gone = false;
    fp_session *s = NULL;
    fp_sample *sm = NULL;
    fpr_profile *p = NULL;
    fpr_idle *idle = NULL;
    fpr_top top = {0};
    cli_record_async as = {.fault = o.async_fault};
    bool have_top = false, summarized = false;
    cli_record_out ro;
    fpr_json_stream *stream = NULL;
    int gate = -1;
    pid_t pid = o.command ? cli_record_launch(o.command, &gate) : (pid_t)o.pid;
    if (pid < 0)
        return CLI_EXIT_ERROR;
    if (cli_record_open_output(&o, (int)pid, &ro)) {
        if (o.command)
            cli_record_release(pid, gate, false);
        return CLI_EXIT_ERROR;
    }
    if (o.command)
        cli_record_release(pid, gate, true);
    int target = (int)pid;
    if (o.sampling.colocate_pid)
        o.sampling.colocate_pid = target;
    int rc = fp_session_new(&o.lib, &s);
    if (rc == FP_OK)
        rc = fp_sample_new(&sm);
    if (rc == FP_OK)
        rc = fpr_profile_new(o.mode, name_thread, &target, &p);
    if (rc == FP_OK && o.mode != FPR_MODE_CPU && !o.async)
        rc = fpr_idle_new(target, RECORD_IDLE_BUDGET, &idle);
    if (rc) {
        fprintf(stderr, "frameproof record: %s\n", fp_error_describe(rc));
        goto out;
    }
    if (cli_record_attach(s, pid, o.command != NULL, &child_status, &child_gone))
        goto out;
    fp_python_info py;
    fp_session_get_python(s, &py);
    if (o.mode == FPR_MODE_GIL && py.free_threaded) {
        fprintf(stderr, "frameproof record: --mode gil: Python %s is free-threaded and has no GIL\n", py.version);
        goto out;
    }
    if (o.async) {
        o.sampling.take = cli_record_async_take;
        o.sampling.take_ctx = &as;
    }
    cli_record_run run = {.profile = p, .s = s, .show_progress = o.progress && isatty(STDERR_FILENO), .idle = idle,
                          .async = o.async ? &as : NULL, .async_mode = o.async_mode};
    fpr_run head = {.pid = target, .py = &py, .reader = fp_session_get_reader_name(s), .rate_hz = o.sampling.rate_hz,
                    .poisson = o.sampling.poisson, .blocking = o.lib.blocking,
                    .realtime = o.sampling.realtime, .colocate = o.sampling.colocate_pid > 0,
                    .hold = o.sampling.colocate_pid > 0 && o.sampling.hold,
                    .async_mode = o.async ? fpr_async_mode_name(o.async_mode) : NULL};
    if (o.format == FPR_FORMAT_JSON) {
        /* Streamed: a pipe or a terminal gets each sample as it is taken. */
        if (cli_record_start_output(&ro))
            goto out;
        struct stat sb;
        bool flush_each = fstat(fileno(ro.f), &sb) != 0 || !S_ISREG(sb.st_mode);
        if (fpr_json_stream_open(ro.f, p, &head, flush_each, &stream) != 0) {
            fprintf(stderr, "frameproof record: writing %s failed: %s\n", cli_record_out_name(&ro), strerror(errno));
            goto out;
        }
        run.stream = stream;
    }
    fps_stats st;
    rc = fps_run(s, sm, &o.sampling, on_sample, &run, &st);
    if (run.show_progress)
        progress(&run, (int64_t)(st.elapsed_s * (double)RECORD_NS_PER_S), true);
    bool ended_ok = !run.oom && !run.write_failed && (rc == FP_OK || rc == FP_E_PROCESS_GONE);
    if (rc && rc != FP_E_PROCESS_GONE)
        fprintf(stderr, "frameproof record: sampling stopped: %s\n", st.first_fatal);
    if (run.oom)
        fputs("frameproof record: out of memory: sampling stopped early\n", stderr);
    if (run.write_failed)
        fprintf(stderr, "frameproof record: writing %s failed: %s: sampling stopped\n", cli_record_out_name(&ro),
                strerror(run.write_errno));
    fp_read_stats rs = {0};
    fp_session_get_read_stats(s, &rs);
    fpr_run info = head; /* the header, and what the run measured */
    info.stats = &st;
    info.torn_walks = rs.torn;
    info.paused_walks = rs.paused;
    info.mean_sample_us = run.attempts ? (double)run.cost_ns / (double)run.attempts / 1e3 : 0.0;
    /* A command still running is ended now, so that the summary can say how
     * it ended. */
    if (o.command) {
        cli_record_end_child(pid, &child_status);
        child_gone = true;
    }
    cli_record_end end = {.st = &st, .p = p, .run = &info, .r = &run, .rc = rc, .child_ended = o.command != NULL,
                      .child_status = child_status};
    have_top = fpr_top_compute(p, RECORD_TOP_FUNCTIONS, &top) == FP_OK;
    cli_record_summarize(&o, &end, &top);
    summarized = true;
    if (cli_record_write_profile(&o, p, &info, have_top ? &top : NULL, stream, &ro) == 0 && ended_ok)
        status = CLI_EXIT_OK;
    stream = NULL; /* closed by cli_record_write_profile, with the output */
out:
    if (o.command && !child_gone) {
        cli_record_end_child(pid, &child_status);
        child_gone = true;
    }
    if (o.command && !summarized)
        cli_record_describe_child(child_status);
    fpr_json_stream_free(stream); /* sampling never started: no summary */
    cli_record_close_output(&ro);
    fpr_top_free(&top);
    cli_record_async_free(&as);
    fpr_idle_free(idle);
    fpr_profile_free(p);
    fp_sample_free(sm);
    fp_session_free(s);
    return status;
}
