/* record_cli.h — what the files of `frameproof record` share: its limits,
 * its options, the state of a run, and the calls between them.  Data flows
 * one way: cmd_record.c (options, sampling) calls record_child.c (the
 * launched command), record_output.c (where the profile goes) and
 * record_summary.c (the summary on stderr), which call nothing back. */
#ifndef CLI_RECORD_CLI_H
#define CLI_RECORD_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "frameproof/async.h"
#include "frameproof/frameproof.h"
#include "async_stacks.h"
#include "out.h"
#include "idle.h"
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
#define RECORD_NS_PER_S 1000000000LL

#define RECORD_STR(x) #x
#define RECORD_XSTR(x) RECORD_STR(x)

/* The self-test faults of --async (--inject-fault). */
enum cli_async_fault {
    CLI_ASYNC_FAULT_NONE = 0,
    CLI_ASYNC_FAULT_STALE_AWAITER, /* stacks joined through the previous read's awaiter edges */
    CLI_ASYNC_FAULT_NO_TASK_STEP,  /* a task being stepped shown as if its waiting frame ran */
};

typedef struct cli_record_opts {
    fp_options lib;
    cli_policy policy;    /* --blocking, --[no-]colocate, --[no-]pause-torn, --inject-fault */
    unsigned long pid;
    char **command;          /* argv after "--", NULL with --pid */
    fps_config sampling;
    int mode, format;
    const char *output;      /* -o: "-" = stdout; NULL = the default (frameproof-PID.EXT with a command, else stdout) */
    bool progress;
    bool async;              /* --async: task stacks from asyncio graph reads */
    int async_mode;          /* --async-mode: enum fpr_async_mode */
    int async_fault;         /* --inject-fault with --async: enum cli_async_fault */
} cli_record_opts;

/* --async: each attempt's graph read (record_async.c). */
typedef struct cli_record_async {
    fp_async_graph *graph;   /* the attempt's graph (NULL after a failed read) */
    fp_async_graph *prev;    /* --inject-fault stale-awaiter: the read before it */
    int fault;               /* enum cli_async_fault */
    fpr_async_buf buf;
    fpr_async_counts counts;
    uint64_t stopped_ns;     /* the reads' stops, summed */
    uint64_t max_stopped_ns;
    char thread_error[256];  /* why a thread's walk first failed in a read that succeeded */
} cli_record_async;

/* What the sampling callback needs. */
typedef struct cli_record_run {
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
    cli_record_async *async; /* --async; NULL otherwise */
    int async_mode;
} cli_record_run;

/* What the summary needs besides the options. */
typedef struct cli_record_end {
    const fps_stats *st;
    const fpr_profile *p;
    const fpr_run *run;
    const cli_record_run *r;
    int rc;                  /* fps_run's return */
    bool child_ended;        /* a launched command was reaped: child_status holds how it ended */
    int child_status;
} cli_record_end;

/* The output, opened before the command runs or the target is attached
 * to, so that a path that cannot be written fails at once rather than
 * after the recording.  An existing file keeps its contents until the
 * profile starts to be written; a file this run created is removed again
 * when no profile was written into it. */
typedef struct cli_record_out {
    FILE *f;
    const char *path;           /* NULL for standard output */
    char name[RECORD_PATH_MAX]; /* the default file's name, frameproof-PID.EXT */
    bool created;               /* the file did not exist before this run */
    bool started;               /* truncated: the profile is being written into it */
} cli_record_out;

/* record_child.c: the launched command. */

/* Forks for command, the child held before it runs the command until
 * cli_record_release() (so that the output, named after its pid, is opened
 * before the command runs); its pid, or -1 with a message.  *gate is the
 * pipe end that releases it. */
pid_t cli_record_launch(char **command, int *gate);
/* Lets a launched command run (go), or has it exit without running; closes
 * the gate.  A command that does not run is reaped here. */
void cli_record_release(pid_t pid, int gate, bool go);
/* Attaches s to pid; for a launched command, retries until its runtime is
 * up, it exits, the timeout passes or Ctrl-C.  0, or -1 with a message. */
int cli_record_attach(fp_session *s, pid_t pid, bool launched, int *child_status, bool *child_gone);
/* Ends a launched command still running: SIGTERM, then SIGKILL after the
 * grace period.  Reaps it into *status. */
void cli_record_end_child(pid_t pid, int *status);
/* How a launched command ended (cf_describe_status), on stderr as a line
 * of its own. */
void cli_record_describe_child(int status);

/* record_output.c: where the profile goes. */

/* Opens the output (pid: the launched command's, which names the default
 * file).  0, or -1 with a message. */
int cli_record_open_output(const cli_record_opts *o, int pid, cli_record_out *ro);
/* The output's name for messages. */
const char *cli_record_out_name(const cli_record_out *ro);
/* Empties an existing regular file before the profile goes into it.  0, or
 * -1 with a message. */
int cli_record_start_output(cli_record_out *ro);
/* Closes the output; a file created for a profile never written is removed. */
void cli_record_close_output(cli_record_out *ro);
/* Ends the output: the streamed json's summary, or the whole profile in the
 * other formats, and says where it went and how many stacks it holds (top:
 * NULL when they could not be counted).  0, or -1 with a message. */
int cli_record_write_profile(const cli_record_opts *o, const fpr_profile *p, const fpr_run *run, const fpr_top *top,
                             fpr_json_stream *stream, cli_record_out *ro);

/* record_async.c: --async, each attempt one graph read with its sample. */

/* The fps_config.take of an --async run (ctx: its cli_record_async). */
int cli_record_async_take(void *ctx, fp_session *s, fp_sample *sm);
/* --async's checks of the options and its policy: every thread stopped
 * per read, so nothing to colocate, hold or pause.  0, or -1 with a message. */
int cli_record_async_policy(cli_record_opts *o);
void cli_record_async_free(cli_record_async *a);
/* The summary's lines on the graph reads. */
void cli_record_async_summarize(const cli_record_opts *o, const cli_record_async *a);

/* record_summary.c: the summary on stderr (how the run ended, the ticks
 * and samples, what was lost and why, what that means, threads off a CPU,
 * the top functions). */
void cli_record_summarize(const cli_record_opts *o, const cli_record_end *e, const fpr_top *top);

#endif
