/* cmd_record.c — `frameproof record`: sample a running process (--pid) or
 * a command it launches (-- COMMAND ...) at a rate, for a duration or until
 * the target exits or Ctrl-C, and write the profile in one of the formats
 * of harness/record.  Progress on a terminal, a summary at the end. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "frameproof/frameproof.h"
#include "idle.h"
#include "interrupt.h"
#include "out.h"
#include "profile.h"
#include "sampler.h"
#include "sampling_policy.h"
#include "top.h"

#define RECORD_DEFAULT_RATE_HZ 100.0
#define RECORD_MAX_RATE_HZ 100000.0      /* 10 µs per tick, below a sample's cost */
#define RECORD_MAX_DURATION_S 86400.0    /* one day */
#define RECORD_ATTACH_TIMEOUT_S 10.0     /* a launched command's runtime must appear within this */
#define RECORD_ATTACH_POLL_NS 10000000L  /* 10 ms between attach attempts on a launched command */
#define RECORD_CHILD_GRACE_NS 2000000000LL /* SIGTERM to SIGKILL for a command still running at the end */
#define RECORD_CHILD_POLL_NS 20000000L
#define RECORD_PROGRESS_NS 500000000LL   /* progress line refresh on a terminal */
#define RECORD_COMM_PATH_MAX 64
/* A share of ticks or thread samples lost from which the summary warns
 * what the losses do to the profile (torn: short-lived stacks
 * under-represented; missed: the rate not held) and says what avoids them. */
#define RECORD_LOSS_NOTE 0.05
#define RECORD_TOP_FUNCTIONS 15          /* rows of the top-functions table at the end */
#define RECORD_IDLE_BUDGET 0.01          /* share of the run's time spent reading thread states (idle.h) */
#define RECORD_MOSTLY_WAITING 0.9        /* a thread this share of whose checked samples were off a CPU is named */
#define RECORD_WAITING_NAMED 4           /* at most this many such threads named */
#define RECORD_LABEL_MAX 96              /* a thread's label: name and native id */
#define RECORD_PATH_MAX 64               /* the default output's name, frameproof-PID.EXT */
/* A share of missed ticks from which the summary of a --realtime run warns
 * that the rate was beyond the sampler, which then held its CPU. */
#define RECORD_REALTIME_MISSED_NOTE 0.05
#define NS_PER_S 1000000000LL

#define RECORD_STR(x) #x
#define RECORD_XSTR(x) RECORD_STR(x)

static const char RECORD_USAGE[] =
    "usage: frameproof record (--pid PID | -- COMMAND [ARG...]) [--rate HZ] [--duration S]\n"
    "                         [--poisson [--seed N]] [--mode wall|cpu|gil]\n"
    "                         [--format collapsed|speedscope|json|gecko] [-o FILE]\n"
    "                         [--blocking | --no-colocate | --no-hold | --no-pause-torn]\n"
    "                         [--inject-fault drop-torn|retry-quiet] [--[no-]realtime]\n"
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
    "  --reader KIND    memory reader: auto, vm or mem (default auto)\n"
    "  --max-depth N    frames per thread before a sample fails (default 65536)\n"
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

typedef struct record_opts {
    fp_options lib;
    cli_policy policy;    /* --blocking, --[no-]colocate, --[no-]pause-torn, --inject-fault */
    unsigned long pid;
    char **command;          /* argv after "--", NULL with --pid */
    fps_config sampling;
    int mode, format;
    const char *output;      /* -o: "-" = stdout; NULL = the default (frameproof-PID.EXT with a command, else stdout) */
    bool progress;
} record_opts;

/* What the sampling callback needs. */
typedef struct record_run {
    fpr_profile *profile;
    fp_session *s;
    fpr_json_stream *stream; /* --format json: each sample written as it is taken */
    bool show_progress, oom, write_failed;
    int write_errno;
    int64_t next_progress_ns;
    uint64_t attempts, ok, errors;
    uint64_t partial;        /* failed attempts whose sample was still usable (some threads torn, the rest kept) */
    int64_t cost_ns;         /* time inside fp_session_sample, summed */
    fpr_idle *idle;          /* wall and gil mode: which kept threads were off a CPU; NULL otherwise */
} record_run;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static void sleep_ns(long ns)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = ns};
    nanosleep(&ts, NULL);
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

static void progress(record_run *r, int64_t t_ns, bool final)
{
    double s = (double)t_ns / (double)NS_PER_S;
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
    record_run *r = ctx;
    r->attempts++;
    r->cost_ns += o->cost_ns;
    if (o->rc == FP_OK)
        r->ok++;
    else
        r->errors++;
    if (o->rc != FP_OK && o->sample)
        r->partial++;
    if (o->sample && add_sample(r->profile, o) != FP_OK) {
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
static int parse_args(int argc, char **argv, record_opts *o)
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
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned long v;
    int c;
    bool seed = false;
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
            if (cli_policy_fault("record", optarg, &o->policy))
                return -1;
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
    if (cli_policy_apply("record", &o->policy, &o->lib, &o->sampling))
        return -1;
    if (seed && !o->sampling.poisson) {
        fputs("frameproof record: --seed needs --poisson\n", stderr);
        return -1;
    }
    return 0;
}

/* Whether the kernel grants --realtime, asked before anything is launched;
 * false with a one-line error. */
static bool realtime_granted(const record_opts *o)
{
    char msg[FPS_ERRMSG_MAX];
    if (!o->sampling.realtime || fps_realtime_check(msg, sizeof msg) == FP_OK)
        return true;
    fprintf(stderr, "frameproof record: --realtime: %s\n", msg);
    return false;
}

/* Forks for command, the child held before it runs the command until
 * release() (so that the output, named after its pid, is opened before the
 * command runs); its pid, or -1 with a message.  *gate is the pipe end
 * that releases it. */
static pid_t launch(char **command, int *gate)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        fprintf(stderr, "frameproof record: pipe: %s\n", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "frameproof record: fork: %s\n", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        close(fds[1]);
        char go = 0;
        ssize_t n;
        while ((n = read(fds[0], &go, 1)) < 0 && errno == EINTR)
            ;
        if (n != 1)
            _exit(127); /* not released: the command never runs */
        execvp(command[0], command);
        fprintf(stderr, "frameproof record: cannot run '%s': %s\n", command[0], strerror(errno));
        _exit(127);
    }
    close(fds[0]);
    *gate = fds[1];
    return pid;
}

/* Lets a launched command run (go), or has it exit without running; closes
 * the gate.  A command that does not run is reaped here. */
static void release(pid_t pid, int gate, bool go)
{
    if (go && write(gate, "g", 1) != 1)
        go = false; /* the child is gone: attaching says so */
    close(gate);
    if (!go)
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
}

/* Whether launched child pid has exited; reaps it into *status. */
static bool child_exited(pid_t pid, int *status)
{
    return waitpid(pid, status, WNOHANG) == pid;
}

/* Attaches s to pid; for a launched command, retries until its runtime is
 * up, it exits, the timeout passes or Ctrl-C.  0, or -1 with a message. */
static int attach(fp_session *s, pid_t pid, bool launched, int *child_status, bool *child_gone)
{
    const int64_t deadline = mono_ns() + (int64_t)(RECORD_ATTACH_TIMEOUT_S * (double)NS_PER_S);
    for (;;) {
        int rc = fp_session_attach_pid(s, (int)pid);
        if (rc == FP_OK)
            return 0;
        if (!launched) {
            fprintf(stderr, "frameproof record: %s\n", fp_session_get_errmsg(s));
            return -1;
        }
        if (child_exited(pid, child_status)) {
            *child_gone = true;
            fprintf(stderr, "frameproof record: the command exited before its Python runtime could be found\n");
            return -1;
        }
        if (cf_interrupted()) {
            fprintf(stderr, "frameproof record: interrupted before the command's Python runtime was found\n");
            return -1;
        }
        if (mono_ns() > deadline) {
            fprintf(stderr, "frameproof record: no Python runtime in the command after %g s: %s\n",
                    RECORD_ATTACH_TIMEOUT_S, fp_session_get_errmsg(s));
            return -1;
        }
        sleep_ns(RECORD_ATTACH_POLL_NS);
    }
}

/* Ends a launched command still running: SIGTERM, then SIGKILL after the
 * grace period.  Reaps it into *status. */
static void end_child(pid_t pid, int *status)
{
    if (child_exited(pid, status))
        return;
    kill(pid, SIGTERM);
    const int64_t deadline = mono_ns() + RECORD_CHILD_GRACE_NS;
    while (mono_ns() < deadline) {
        if (child_exited(pid, status))
            return;
        sleep_ns(RECORD_CHILD_POLL_NS);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
}

/* How a launched command ended, in words ("exit status 0"). */
static void child_words(int status, char *buf, size_t size)
{
    if (WIFEXITED(status))
        snprintf(buf, size, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, size, "ended by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, size, "status %d", status);
}

static void describe_child(int status)
{
    char words[RECORD_LABEL_MAX];
    child_words(status, words, sizeof words);
    fprintf(stderr, "frameproof record: the command's %s\n", words);
}

static double share(uint64_t part, uint64_t whole)
{
    return whole ? (double)part / (double)whole : 0.0;
}

/* What the summary needs besides the options. */
typedef struct record_end {
    const fps_stats *st;
    const fpr_profile *p;
    const fpr_run *run;
    const record_run *r;
    int rc;                  /* fps_run's return */
    bool child_ended;        /* a launched command was reaped: child_status holds how it ended */
    int child_status;
} record_end;

/* The first line: how long and until what. */
static void summarize_end(const record_opts *o, const record_end *e)
{
    char why[2 * RECORD_LABEL_MAX] = "";
    char words[RECORD_LABEL_MAX] = "";
    if (e->child_ended)
        child_words(e->child_status, words, sizeof words);
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
static void summarize_errors(const record_end *e)
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
static void summarize_rereads(const record_opts *o, const record_end *e)
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
    if (o->policy.realtime_refused[0])
        fprintf(stderr,
                "  note: real-time priority was refused (%s), so a held thread could take the sampler's CPU back "
                "in the middle of a read: samples run longer and more ticks are missed; root or CAP_SYS_NICE "
                "avoids it\n",
                o->policy.realtime_refused);
}

/* The one line on what the losses mean for the profile. */
static void summarize_verdict(const record_opts *o, const record_end *e, uint64_t ticks, uint64_t refused)
{
    const fpr_dropped *d = fpr_profile_dropped(e->p);
    const uint64_t kept = fpr_profile_points(e->p);
    const double lost = share(e->st->missed_ticks + refused, ticks), missed = share(e->st->missed_ticks, ticks);
    const double torn = share(refused, ticks), torn_threads = share(d->torn_threads, kept + d->torn_threads);
    if (torn >= RECORD_LOSS_NOTE || torn_threads >= RECORD_LOSS_NOTE)
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
    else
        fprintf(stderr,
                "  lost %.1f %% of ticks (missed or refused) and %.1f %% of thread samples (torn): too few to bias the "
                "profile\n",
                100.0 * lost, 100.0 * torn_threads);
}

/* The share of kept thread samples of threads off a CPU, and the threads
 * that were mostly so. */
static void summarize_idle(const record_end *e)
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
 * functions.  Where the profile went follows it (write_profile). */
static void summarize(const record_opts *o, const record_end *e, const fpr_top *top)
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
    fprintf(stderr,
            "  samples: %" PRIu64 " taken whole, %" PRIu64 " with some threads torn, %" PRIu64
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
    summarize_top(top);
}

/* Whether the profile goes to standard output: -o -, or --pid without -o.
 * A launched command without -o writes to frameproof-PID.EXT instead, so
 * that the profile is never mixed with the command's own output. */
static bool to_stdout(const record_opts *o)
{
    return o->output ? strcmp(o->output, "-") == 0 : !o->command;
}

/* The output, opened before the command runs or the target is attached
 * to, so that a path that cannot be written fails at once rather than
 * after the recording.  An existing file keeps its contents until the
 * profile starts to be written; a file this run created is removed again
 * when no profile was written into it. */
typedef struct record_out {
    FILE *f;
    const char *path;           /* NULL for standard output */
    char name[RECORD_PATH_MAX]; /* the default file's name, frameproof-PID.EXT */
    bool created;               /* the file did not exist before this run */
    bool started;               /* truncated: the profile is being written into it */
} record_out;

static const char *out_name(const record_out *ro)
{
    return ro->path ? ro->path : "standard output";
}

/* pid: the launched command's, which names the default file.  0, or -1
 * with a message. */
static int open_output(const record_opts *o, int pid, record_out *ro)
{
    *ro = (record_out){0};
    if (to_stdout(o)) {
        ro->f = stdout;
        return 0;
    }
    ro->path = o->output;
    if (!ro->path) {
        snprintf(ro->name, sizeof ro->name, "frameproof-%d.%s", pid, fpr_format_extension(o->format));
        ro->path = ro->name;
    }
    int fd = open(ro->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    ro->created = fd >= 0;
    if (fd < 0 && errno == EEXIST)
        fd = open(ro->path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || !(ro->f = fdopen(fd, "w"))) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (ro->created)
            unlink(ro->path);
        fprintf(stderr, "frameproof record: cannot write %s: %s\n", ro->path, strerror(e));
        return -1;
    }
    return 0;
}

/* Empties an existing regular file before the profile goes into it (a pipe
 * or a device has nothing to empty).  0, or -1 with a message. */
static int start_output(record_out *ro)
{
    struct stat sb;
    if (!ro->started && ro->f != stdout && fstat(fileno(ro->f), &sb) == 0 && S_ISREG(sb.st_mode) &&
        ftruncate(fileno(ro->f), 0) != 0) {
        fprintf(stderr, "frameproof record: writing %s failed: %s\n", out_name(ro), strerror(errno));
        return -1;
    }
    ro->started = true;
    return 0;
}

/* Closes the output; a file created for a profile never written is removed. */
static void close_output(record_out *ro)
{
    if (ro->f && ro->f != stdout) {
        fclose(ro->f);
        if (ro->created && !ro->started)
            unlink(ro->path);
    }
    ro->f = NULL;
}

/* Ends the output: the streamed json's summary (already started), or the
 * whole profile in the other formats, and says where it went and how many
 * stacks it holds (top: NULL when they could not be counted).  0, or -1
 * with a message. */
static int write_profile(const record_opts *o, const fpr_profile *p, const fpr_run *run, const fpr_top *top,
                         fpr_json_stream *stream, record_out *ro)
{
    if (start_output(ro))
        return -1;
    FILE *out = ro->f;
    ro->f = NULL;
    int rc = stream ? fpr_json_stream_close(stream, p, run) : fpr_write(out, o->format, p, run);
    int err = errno;
    if (out != stdout && fclose(out) != 0 && rc == 0) {
        rc = -1;
        err = errno;
    }
    if (rc) {
        fprintf(stderr, "frameproof record: writing %s failed: %s\n", out_name(ro), strerror(err));
        return -1;
    }
    fprintf(stderr, "frameproof record: wrote %s profile to %s", fpr_format_name(o->format), out_name(ro));
    if (top)
        fprintf(stderr, ": %" PRIu64 " distinct stacks in %zu threads, %" PRIu64 " thread samples", top->stacks,
                fpr_profile_thread_count(p), top->samples);
    fputc('\n', stderr);
    return 0;
}

int cli_cmd_record(int argc, char **argv)
{
    record_opts o = {.mode = FPR_MODE_WALL, .format = FPR_FORMAT_COLLAPSED, .progress = true};
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
    bool have_top = false, summarized = false;
    record_out ro;
    fpr_json_stream *stream = NULL;
    int gate = -1;
    pid_t pid = o.command ? launch(o.command, &gate) : (pid_t)o.pid;
    if (pid < 0)
        return CLI_EXIT_ERROR;
    if (open_output(&o, (int)pid, &ro)) {
        if (o.command)
            release(pid, gate, false);
        return CLI_EXIT_ERROR;
    }
    if (o.command)
        release(pid, gate, true);
    int target = (int)pid;
    if (o.sampling.colocate_pid)
        o.sampling.colocate_pid = target;
    int rc = fp_session_new(&o.lib, &s);
    if (rc == FP_OK)
        rc = fp_sample_new(&sm);
    if (rc == FP_OK)
        rc = fpr_profile_new(o.mode, name_thread, &target, &p);
    if (rc == FP_OK && o.mode != FPR_MODE_CPU)
        rc = fpr_idle_new(target, RECORD_IDLE_BUDGET, &idle);
    if (rc) {
        fprintf(stderr, "frameproof record: %s\n", fp_error_describe(rc));
        goto out;
    }
    if (attach(s, pid, o.command != NULL, &child_status, &child_gone))
        goto out;
    fp_python_info py;
    fp_session_get_python(s, &py);
    if (o.mode == FPR_MODE_GIL && py.free_threaded) {
        fprintf(stderr, "frameproof record: --mode gil: Python %s is free-threaded and has no GIL\n", py.version);
        goto out;
    }
    record_run run = {.profile = p, .s = s, .show_progress = o.progress && isatty(STDERR_FILENO), .idle = idle};
    fpr_run head = {.pid = target, .py = &py, .reader = fp_session_get_reader_name(s), .rate_hz = o.sampling.rate_hz,
                    .poisson = o.sampling.poisson, .blocking = o.lib.blocking,
                    .realtime = o.sampling.realtime, .colocate = o.sampling.colocate_pid > 0,
                    .hold = o.sampling.colocate_pid > 0 && o.sampling.hold};
    if (o.format == FPR_FORMAT_JSON) {
        /* Streamed: a pipe or a terminal gets each sample as it is taken. */
        if (start_output(&ro))
            goto out;
        struct stat sb;
        bool flush_each = fstat(fileno(ro.f), &sb) != 0 || !S_ISREG(sb.st_mode);
        if (fpr_json_stream_open(ro.f, p, &head, flush_each, &stream) != 0) {
            fprintf(stderr, "frameproof record: writing %s failed: %s\n", out_name(&ro), strerror(errno));
            goto out;
        }
        run.stream = stream;
    }
    fps_stats st;
    rc = fps_run(s, sm, &o.sampling, on_sample, &run, &st);
    if (run.show_progress)
        progress(&run, (int64_t)(st.elapsed_s * (double)NS_PER_S), true);
    bool ended_ok = !run.oom && !run.write_failed && (rc == FP_OK || rc == FP_E_PROCESS_GONE);
    if (rc && rc != FP_E_PROCESS_GONE)
        fprintf(stderr, "frameproof record: sampling stopped: %s\n", st.first_fatal);
    if (run.oom)
        fputs("frameproof record: out of memory: sampling stopped early\n", stderr);
    if (run.write_failed)
        fprintf(stderr, "frameproof record: writing %s failed: %s: sampling stopped\n", out_name(&ro),
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
        end_child(pid, &child_status);
        child_gone = true;
    }
    record_end end = {.st = &st, .p = p, .run = &info, .r = &run, .rc = rc, .child_ended = o.command != NULL,
                      .child_status = child_status};
    have_top = fpr_top_compute(p, RECORD_TOP_FUNCTIONS, &top) == FP_OK;
    summarize(&o, &end, &top);
    summarized = true;
    if (write_profile(&o, p, &info, have_top ? &top : NULL, stream, &ro) == 0 && ended_ok)
        status = CLI_EXIT_OK;
    stream = NULL; /* closed by write_profile, with the output */
out:
    if (o.command && !child_gone) {
        end_child(pid, &child_status);
        child_gone = true;
    }
    if (o.command && !summarized)
        describe_child(child_status);
    fpr_json_stream_free(stream); /* sampling never started: no summary */
    close_output(&ro);
    fpr_top_free(&top);
    fpr_idle_free(idle);
    fpr_profile_free(p);
    fp_sample_free(sm);
    fp_session_free(s);
    return status;
}
