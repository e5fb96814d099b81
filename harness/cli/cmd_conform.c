/* cmd_conform.c — `frameproof conform`: option parsing, the case list
 * (scenarios x interpreters), the scheduler that runs each case in a forked
 * worker process (up to --jobs at a time), SIGINT/SIGTERM handling, and
 * the merge of the workers' results into report.json, junit.xml and
 * matrix.md. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cli.h"
#include "case.h"
#include "conform_cli.h"
#include "scenarios.h"
#include "junit.h"
#include "manifest.h"
#include "matrix.h"
#include "interrupt.h"
#include "spawn.h"
#include "strbuf.h"
#include "target_sync.h"
#include "install_paths.h"
#include "conform.h"
#include "util.h"
#include "sample.h"
#include "frameproof/frameproof.h"


#define DEFAULT_REPORT_DIR "conform-report"
#define INDEX_RELPATH "scenarios/index.json"
#define REAP_POLL_NS 20000000L   /* scheduler wake-up interval */
#define SKIP_REASON_LEN 160u

static const char CONFORM_USAGE_HEAD[] =
    "usage: frameproof conform [--python ID ...] [--scenario NAME ...] [--fast]\n"
    "                          [--report-dir DIR] [--jobs N] [--manifest PATH]\n"
    "                          [--targets DIR] [--timeout-scale X] [--differential]\n"
    "                          [--inject-fault drop-frame|shift-line]\n"
    "\n"
    "Runs every ground-truth scenario (targets/scenarios) under every interpreter\n"
    "of the manifest.  At each checkpoint the target is held while libframeproof\n"
    "samples it in four configurations: reader vm (process_vm_readv) or mem\n"
    "(/proc/PID/mem), times code cache on or off; one session per configuration\n"
    "is kept across all checkpoints of a run and takes 3 samples per checkpoint.\n"
    "Every sample is compared with the in-target truth: for each parked thread\n"
    "(matched by native id) the thread id, the main flag, the exception flag\n"
    "(when the unwinder knows it) and every frame (function, name, file, line,\n"
    "end_line, column, end_column, kind; same count, same order); and the sample\n"
    "must hold exactly the threads listed in all_threads.  Run it as root.\n"
    "\n"
    "Options:\n"
    "  --python ID          interpreter id from the manifest (repeatable;\n"
    "                       default: every entry)\n"
    "  --scenario NAME      scenario name from the index (repeatable; default: all)\n"
    "  --fast               only the scenarios marked \"fast\" in the index\n"
    "  --manifest PATH      interpreter manifest (default:\n"
    "                       ${FRAMEPROOF_HOME:-" CF_DEFAULT_HOME "}/" CF_MANIFEST_NAME ")\n"
    "  --targets DIR        directory holding scenarios/index.json and groundtruth/\n"
    "                       (default: $FRAMEPROOF_TARGETS, else the first of\n"
    "                       these that holds scenarios/index.json:\n"
    "%s)\n"
    "  --report-dir DIR     reports and logs (default: ./" DEFAULT_REPORT_DIR ")\n"
    "  --jobs N             cases run in parallel, each in a forked worker process\n"
    "                       (default 1, at most %u)\n"
    "  --timeout-scale X    multiply every scenario's timeout (from the index) by\n"
    "                       X (default 1.0); debug builds get a further x%.0f.  Time\n"
    "                       the target is held at checkpoints does not count.\n"
    "  --differential       also run CPython's _remote_debugging.RemoteUnwinder\n"
    "                       (3.14+) at each checkpoint and count the parked threads\n"
    "                       whose stack it gets right on function, file and line.\n"
    "                       Informational: never changes a verdict or the exit\n"
    "                       status.  Default: off.\n"
    "  --inject-fault KIND  self-test aid that proves wrong results are caught:\n"
    "                       corrupt every sample before comparing.  drop-frame\n"
    "                       removes the innermost frame of the first ground-truth\n"
    "                       thread (the main thread when it is parked); shift-line\n"
    "                       adds 1 to that frame's line.  Expect FAILs.\n"
    "  --help               print this help\n"
    "\n";

static const char CONFORM_USAGE_TAIL[] =
    "Interpreters: manifest entries {\"id\", \"version\", \"free_threaded\", \"debug\",\n"
    "\"root\", \"argv\"}.  With root \"/\" the harness runs ARGV... SCRIPT; otherwise\n"
    "it copies targets/groundtruth and targets/scenarios to\n"
    "ROOT" CF_CHROOT_TARGETS "/ (only changed files) and runs\n"
    "chroot ROOT ARGV... " CF_CHROOT_TARGETS "/scenarios/FILE.  Scenarios whose\n"
    "min_version, max_version or builds (any, gil, ft) exclude the entry are\n"
    "skipped.  A target runs in its own process group, with stdin on /dev/null,\n"
    "without PYTHONPATH and PYTHONHOME, and with the channel on descriptors 3\n"
    "(FP_GT_RFD) and 4 (FP_GT_WFD); its whole group is killed and reaped on every\n"
    "path.  The sampled pid is the spawned pid (chroot execs the interpreter); if\n"
    "\"hello\" reports another pid, that pid is sampled and a note is recorded.\n"
    "\n"
    "Verdicts per case (scenario x interpreter):\n"
    "  pass   every sample of every configuration matched the truth\n"
    "  FAIL   a mismatch, a failed sample or a failed attach in a configuration\n"
    "  skip   the scenario does not apply to the interpreter\n"
    "  error  harness error: timeout (target killed), crash, a non-JSON or\n"
    "         unexpected channel line, end of channel before \"done\", non-zero\n"
    "         exit after it, or the target could not be started; the message\n"
    "         includes the end of the target's stderr\n"
    "\n"
    "Reports, in the report directory:\n"
    "  report.json  options, totals and every case: interpreter, scenario,\n"
    "               status (pass, fail, skip, error, or not_run for cases an\n"
    "               interruption kept from starting), summary, error, stderr\n"
    "               tail, checkpoints, the target's python info, notes, and\n"
    "               for each configuration the number of samples, failed\n"
    "               samples and mismatches and every failure (checkpoint,\n"
    "               sample, error text or mismatches, each with a message and\n"
    "               the expected and actual frames as JSON; a sample identical\n"
    "               to an earlier one refers to it with \"same_as_sample\");\n"
    "               plus the differential counts and disagreement examples\n"
    "  junit.xml    one testcase per scenario x interpreter x configuration, a\n"
    "               testsuite per interpreter; <failure> for mismatches, <error>\n"
    "               for harness errors, <skipped> for skips\n"
    "  matrix.md    table of scenarios x interpreters (pass, FAIL, skip, error)\n"
    "               with totals, the differential column when enabled, and the\n"
    "               list of failing cases\n"
    "  logs/ID/SCENARIO.stdout, logs/ID/SCENARIO.stderr: the target's output\n"
    "Progress goes to stderr, one line per case; the matrix, the totals and the\n"
    "report paths go to stdout.\n"
    "\n"
    "Exit status: 0 if every case passed or was skipped; 1 on any FAIL or error,\n"
    "or if the manifest, index or report directory is unusable; 2 on a usage\n"
    "error; 130 after SIGINT or SIGTERM (no new cases start, running targets\n"
    "are killed, partial reports are written).\n";

typedef struct conform_opts {
    const char **pythons;
    size_t npythons;
    const char **scenarios;
    size_t nscenarios;
    bool fast;
    bool differential;
    const char *report_dir;
    const char *manifest;
    const char *targets;
    unsigned jobs;
    double timeout_scale;
    int fault;
} conform_opts;

enum slot_state { SLOT_PENDING, SLOT_RUNNING, SLOT_DONE };

typedef struct case_slot {
    size_t interp, scen;
    char skip[SKIP_REASON_LEN];   /* "" when the scenario applies */
    int state;
    pid_t worker;
    double started;
    json_object *result;
} case_slot;

typedef struct conform_run {
    conform_opts o;
    cf_manifest manifest;
    cf_index index;
    size_t *interps;               /* selected manifest indexes */
    size_t ninterps;
    size_t *scens;                 /* selected index entries */
    size_t nscens;
    case_slot *cases;
    size_t ncases;
    char targets[PATH_MAX];        /* absolute */
    char report[PATH_MAX];         /* absolute */
    char work[PATH_MAX];           /* report/.work-PID: per-case result files */
    char manifest_path[PATH_MAX];
    size_t finished;
    double started;
} conform_run;

static const char *fault_name(int fault)
{
    return fault == CF_FAULT_DROP_FRAME ? "drop-frame" : fault == CF_FAULT_SHIFT_LINE ? "shift-line" : NULL;
}

static void print_usage(FILE *f)
{
    char defaults[4 * PATH_MAX];
    if (cf_default_targets_describe(defaults, sizeof defaults, "                         "))
        snprintf(defaults, sizeof defaults, "(paths too long)");
    fprintf(f, CONFORM_USAGE_HEAD, defaults, CF_MAX_JOBS, CF_DEBUG_TIMEOUT_FACTOR);
    fputs(CONFORM_USAGE_TAIL, f);
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("frameproof conform: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\n(see frameproof conform --help)\n", stderr);
    return FP_EXIT_USAGE;
}

/* Returns -1 on success, else the exit status to return. */
static int parse_options(int argc, char **argv, conform_opts *o)
{
    enum { O_PY = 1, O_SCEN, O_FAST, O_REPORT, O_JOBS, O_MANIFEST, O_TARGETS, O_SCALE, O_DIFF, O_FAULT, O_HELP };
    static const struct option longopts[] = {
        {"python", required_argument, NULL, O_PY},
        {"scenario", required_argument, NULL, O_SCEN},
        {"fast", no_argument, NULL, O_FAST},
        {"report-dir", required_argument, NULL, O_REPORT},
        {"jobs", required_argument, NULL, O_JOBS},
        {"manifest", required_argument, NULL, O_MANIFEST},
        {"targets", required_argument, NULL, O_TARGETS},
        {"timeout-scale", required_argument, NULL, O_SCALE},
        {"differential", no_argument, NULL, O_DIFF},
        {"inject-fault", required_argument, NULL, O_FAULT},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    o->jobs = 1;
    o->timeout_scale = 1.0;
    o->report_dir = DEFAULT_REPORT_DIR;
    int c;
    unsigned long v;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_PY: o->pythons[o->npythons++] = optarg; break;
        case O_SCEN: o->scenarios[o->nscenarios++] = optarg; break;
        case O_FAST: o->fast = true; break;
        case O_REPORT:
            if (!*optarg)
                return usage_error("--report-dir must not be empty%s", "");
            o->report_dir = optarg;
            break;
        case O_JOBS:
            if (fp_parse_uint(optarg, CF_MAX_JOBS, &v) || v == 0)
                return usage_error("--jobs must be an integer from 1 to 256, not '%s'", optarg);
            o->jobs = (unsigned)v;
            break;
        case O_MANIFEST: o->manifest = optarg; break;
        case O_TARGETS: o->targets = optarg; break;
        case O_SCALE: {
            char *end;
            errno = 0;
            double x = strtod(optarg, &end);
            if (errno || end == optarg || *end || !isfinite(x) || x <= 0 || x > CF_MAX_TIMEOUT_SCALE)
                return usage_error("--timeout-scale must be a number > 0 and <= 1000, not '%s'", optarg);
            o->timeout_scale = x;
            break;
        }
        case O_DIFF: o->differential = true; break;
        case O_FAULT:
            if (strcmp(optarg, "drop-frame") == 0)
                o->fault = CF_FAULT_DROP_FRAME;
            else if (strcmp(optarg, "shift-line") == 0)
                o->fault = CF_FAULT_SHIFT_LINE;
            else
                return usage_error("--inject-fault must be drop-frame or shift-line, not '%s'", optarg);
            break;
        case O_HELP:
        case 'h':
            print_usage(stdout);
            return FP_EXIT_OK;
        default:
            fputs("(see frameproof conform --help)\n", stderr);
            return FP_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    return -1;
}

static bool listed(const char **list, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0)
            return true;
    return false;
}

/* Loads manifest and index and selects interpreters and scenarios.
 * Returns -1 on success, else the exit status. */
static int load_inputs(conform_run *r)
{
    char err[CF_ERRMSG_LEN];
    const conform_opts *o = &r->o;
    if (o->manifest) {
        snprintf(r->manifest_path, sizeof r->manifest_path, "%s", o->manifest);
    } else {
        const char *home = getenv("FRAMEPROOF_HOME");
        if (!home || !*home)
            home = CF_DEFAULT_HOME;
        if (cf_path_join(r->manifest_path, sizeof r->manifest_path, home, CF_MANIFEST_NAME)) {
            fprintf(stderr, "frameproof conform: FRAMEPROOF_HOME too long\n");
            return FP_EXIT_ERROR;
        }
    }
    if (cf_manifest_load(r->manifest_path, &r->manifest, err, sizeof err)) {
        fprintf(stderr, "frameproof conform: %s\n", err);
        return FP_EXIT_ERROR;
    }
    const char *targets = o->targets;
    if (!targets)
        targets = getenv("FRAMEPROOF_TARGETS");
    if (!targets || !*targets) {
        if (cf_default_targets_dir(r->targets, sizeof r->targets, err, sizeof err)) {
            fprintf(stderr, "frameproof conform: %s\n", err);
            return FP_EXIT_ERROR;
        }
    } else if (!realpath(targets, r->targets)) {
        fprintf(stderr, "frameproof conform: targets directory %s: %s\n", targets, strerror(errno));
        return FP_EXIT_ERROR;
    }
    char index_path[PATH_MAX];
    if (cf_path_join(index_path, sizeof index_path, r->targets, INDEX_RELPATH) ||
        cf_index_load(index_path, &r->index, err, sizeof err)) {
        fprintf(stderr, "frameproof conform: %s\n", err);
        return FP_EXIT_ERROR;
    }
    for (size_t i = 0; i < o->npythons; i++) {
        if (cf_manifest_find(&r->manifest, o->pythons[i]) < 0) {
            fprintf(stderr, "frameproof conform: no interpreter \"%s\" in %s; known:", o->pythons[i],
                    r->manifest_path);
            for (size_t k = 0; k < r->manifest.count; k++)
                fprintf(stderr, " %s", r->manifest.items[k].id);
            fputc('\n', stderr);
            return FP_EXIT_USAGE;
        }
    }
    for (size_t i = 0; i < o->nscenarios; i++) {
        if (cf_index_find(&r->index, o->scenarios[i]) < 0) {
            fprintf(stderr, "frameproof conform: no scenario \"%s\" in %s\n", o->scenarios[i], index_path);
            return FP_EXIT_USAGE;
        }
    }
    r->interps = calloc(r->manifest.count + 1, sizeof *r->interps);
    r->scens = calloc(r->index.count + 1, sizeof *r->scens);
    if (!r->interps || !r->scens) {
        fprintf(stderr, "frameproof conform: out of memory\n");
        return FP_EXIT_ERROR;
    }
    for (size_t i = 0; i < r->manifest.count; i++)
        if (!o->npythons || listed(o->pythons, o->npythons, r->manifest.items[i].id))
            r->interps[r->ninterps++] = i;
    for (size_t i = 0; i < r->index.count; i++) {
        const cf_scenario *s = &r->index.items[i];
        if ((o->nscenarios && !listed(o->scenarios, o->nscenarios, s->name)) || (o->fast && !s->fast))
            continue;
        r->scens[r->nscens++] = i;
    }
    if (r->ninterps == 0 || r->nscens == 0) {
        fprintf(stderr, "frameproof conform: nothing to run (%zu interpreters, %zu scenarios selected)\n",
                r->ninterps, r->nscens);
        return FP_EXIT_USAGE;
    }
    return -1;
}

/* Creates the report, logs and work directories. */
static int prepare_dirs(conform_run *r)
{
    if (cf_mkdir_p(r->o.report_dir) != CF_OK || !realpath(r->o.report_dir, r->report)) {
        fprintf(stderr, "frameproof conform: report directory %s: %s\n", r->o.report_dir, strerror(errno));
        return CF_E_IO;
    }
    char name[64];
    snprintf(name, sizeof name, ".work-%ld", (long)getpid());
    if (cf_path_join(r->work, sizeof r->work, r->report, name) || cf_mkdir_p(r->work) != CF_OK) {
        fprintf(stderr, "frameproof conform: cannot create %s: %s\n", r->work, strerror(errno));
        r->work[0] = '\0';
        return CF_E_IO;
    }
    for (size_t i = 0; i < r->ninterps; i++) {
        char safe[NAME_MAX], rel[PATH_MAX], dir[PATH_MAX];
        cf_sanitize_name(r->manifest.items[r->interps[i]].id, safe, sizeof safe);
        if (cf_path_join(rel, sizeof rel, "logs", safe) || cf_path_join(dir, sizeof dir, r->report, rel) ||
            cf_mkdir_p(dir) != CF_OK) {
            fprintf(stderr, "frameproof conform: cannot create %s/%s: %s\n", r->report, rel, strerror(errno));
            return CF_E_IO;
        }
    }
    return CF_OK;
}

static int build_cases(conform_run *r)
{
    r->ncases = r->ninterps * r->nscens;
    r->cases = calloc(r->ncases, sizeof *r->cases);
    if (!r->cases)
        return CF_E_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < r->ninterps; i++) {
        for (size_t s = 0; s < r->nscens; s++, k++) {
            case_slot *c = &r->cases[k];
            c->interp = r->interps[i];
            c->scen = r->scens[s];
            const char *why = cf_scenario_skip_reason(&r->index.items[c->scen], &r->manifest.items[c->interp],
                                                      c->skip, sizeof c->skip);
            if (!why)
                c->skip[0] = '\0';
        }
    }
    return CF_OK;
}

/* Copies the in-target files into every chroot that has cases to run; on
 * failure that interpreter's cases become harness errors. */
static int sync_roots(conform_run *r)
{
    for (size_t i = 0; i < r->ninterps; i++) {
        const cf_interp *in = &r->manifest.items[r->interps[i]];
        if (!cf_interp_chrooted(in))
            continue;
        bool needed = false, done_before = false;
        for (size_t k = 0; k < r->ncases; k++)
            needed |= r->cases[k].interp == r->interps[i] && !r->cases[k].skip[0];
        for (size_t j = 0; j < i; j++)
            done_before |= strcmp(r->manifest.items[r->interps[j]].root, in->root) == 0;
        if (!needed || done_before)
            continue;
        char err[CF_ERRMSG_LEN], why[CF_ERRMSG_LEN + 64];
        if (cf_sync_targets(r->targets, in->root, err, sizeof err) == CF_OK)
            continue;
        snprintf(why, sizeof why, "cannot copy the targets into %s: %s", in->root, err);
        for (size_t k = 0; k < r->ncases; k++) {
            case_slot *c = &r->cases[k];
            if (strcmp(r->manifest.items[c->interp].root, in->root) != 0 || c->skip[0] || c->result)
                continue;
            c->result = cf_case_stub(&r->manifest.items[c->interp], &r->index.items[c->scen], "error", why);
            if (!c->result)
                return CF_E_NOMEM;
        }
    }
    return CF_OK;
}

static void case_file(const conform_run *r, size_t k, const char *ext, char *out, size_t len)
{
    char name[64];
    snprintf(name, sizeof name, "case-%zu.%s", k, ext);
    if (cf_path_join(out, len, r->work, name))
        out[0] = '\0';
}

/* Body of a worker process: runs case k and writes its result file.
 * Returns the worker's exit status. */
static int worker_main(conform_run *r, size_t k)
{
    case_slot *c = &r->cases[k];
    const cf_interp *in = &r->manifest.items[c->interp];
    char safe[NAME_MAX], rel[PATH_MAX], dir[PATH_MAX], pgid[PATH_MAX], out[PATH_MAX];
    cf_sanitize_name(in->id, safe, sizeof safe);
    if (cf_path_join(rel, sizeof rel, "logs", safe) || cf_path_join(dir, sizeof dir, r->report, rel))
        return FP_EXIT_ERROR;
    case_file(r, k, "pgid", pgid, sizeof pgid);
    case_file(r, k, "json", out, sizeof out);
    cf_case_params p = {
        .interp = in,
        .scen = &r->index.items[c->scen],
        .targets_dir = r->targets,
        .log_dir = dir,
        .log_rel = rel,
        .pgid_path = pgid,
        .timeout_scale = r->o.timeout_scale,
        .differential = r->o.differential,
        .fault = r->o.fault,
    };
    json_object *result = NULL;
    if (cf_case_run(&p, &result) != CF_OK)
        return FP_EXIT_ERROR;
    char err[CF_ERRMSG_LEN];
    int rc = cf_json_write_file(out, result, false, false, err, sizeof err);
    json_object_put(result);
    return rc == CF_OK ? FP_EXIT_OK : FP_EXIT_ERROR;
}

static void progress(conform_run *r, case_slot *c)
{
    r->finished++;
    const char *status = cf_json_str(c->result, "status", "error");
    const char *word = strcmp(status, "fail") == 0 ? "FAIL" : status;
    double secs = cf_json_double(c->result, "seconds", 0);
    fprintf(stderr, "[%zu/%zu] %s %s ... %s", r->finished, r->ncases, r->manifest.items[c->interp].id,
            r->index.items[c->scen].name, word);
    if (strcmp(status, "skip") != 0)
        fprintf(stderr, " (%.1fs)", secs);
    const char *summary = cf_json_str(c->result, "summary", "");
    if (strcmp(status, "pass") != 0 && *summary)
        fprintf(stderr, ": %s", summary);
    fputc('\n', stderr);
}

static int launch_worker(conform_run *r, size_t k)
{
    case_slot *c = &r->cases[k];
    fflush(NULL); /* nothing buffered may be written twice */
    pid_t pid = fork();
    if (pid < 0) {
        char why[CF_ERRMSG_LEN];
        snprintf(why, sizeof why, "cannot fork a worker: %s", strerror(errno));
        c->result = cf_case_stub(&r->manifest.items[c->interp], &r->index.items[c->scen], "error", why);
        c->state = SLOT_DONE;
        return c->result ? CF_OK : CF_E_NOMEM;
    }
    if (pid == 0)
        _exit(worker_main(r, k));
    c->worker = pid;
    c->state = SLOT_RUNNING;
    c->started = cf_now();
    return CF_OK;
}

/* Reads a finished worker's result; if there is none (the worker crashed),
 * kills the target group it left behind and records a harness error. */
static int collect(conform_run *r, size_t k, int status)
{
    case_slot *c = &r->cases[k];
    char path[PATH_MAX], pgid_path[PATH_MAX], err[CF_ERRMSG_LEN];
    case_file(r, k, "json", path, sizeof path);
    case_file(r, k, "pgid", pgid_path, sizeof pgid_path);
    c->state = SLOT_DONE;
    int rc = cf_json_read_file(path, &c->result, err, sizeof err);
    unlink(path);
    FILE *f = fopen(pgid_path, "re");
    if (f) {
        long pg = 0;
        if (fscanf(f, "%ld", &pg) == 1 && pg > 1)
            (void)killpg((pid_t)pg, SIGKILL);
        fclose(f);
        unlink(pgid_path);
    }
    if (rc == CF_OK)
        return CF_OK;
    if (rc == CF_E_NOMEM)
        return rc;
    char st[128], why[CF_ERRMSG_LEN + 256];
    cf_describe_status(status, st, sizeof st);
    snprintf(why, sizeof why,
             "the worker process running this case ended (%s) without a result: a crash in libframeproof or "
             "the harness; its target was killed",
             st);
    c->result = cf_case_stub(&r->manifest.items[c->interp], &r->index.items[c->scen], "error", why);
    if (c->result)
        cf_json_add(c->result, "seconds", cf_json_seconds(cf_now() - c->started));
    return c->result ? CF_OK : CF_E_NOMEM;
}

/* Runs every case, at most --jobs at a time.  Returns CF_OK or
 * CF_E_NOMEM; an interruption leaves later cases pending. */
static int schedule(conform_run *r)
{
    size_t next = 0, running = 0;
    bool stop_sent = false;
    int rc = CF_OK;
    for (;;) {
        if (cf_interrupted() && !stop_sent) {
            stop_sent = true;
            for (size_t k = 0; k < r->ncases; k++)
                if (r->cases[k].state == SLOT_RUNNING)
                    kill(r->cases[k].worker, SIGTERM);
        }
        while (rc == CF_OK && !cf_interrupted() && running < r->o.jobs && next < r->ncases) {
            case_slot *c = &r->cases[next];
            size_t k = next++;
            if (c->skip[0] || c->result) {
                if (!c->result)
                    c->result = cf_case_stub(&r->manifest.items[c->interp], &r->index.items[c->scen], "skip",
                                             c->skip);
                c->state = SLOT_DONE;
                if (!c->result)
                    rc = CF_E_NOMEM;
                else
                    progress(r, c);
                continue;
            }
            rc = launch_worker(r, k);
            if (c->state == SLOT_RUNNING)
                running++;
            else if (rc == CF_OK)
                progress(r, c);
        }
        if (running == 0)
            break;
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) {
            struct timespec ts = {0, REAP_POLL_NS};
            nanosleep(&ts, NULL);
            continue;
        }
        for (size_t k = 0; k < r->ncases; k++) {
            case_slot *c = &r->cases[k];
            if (c->state != SLOT_RUNNING || c->worker != pid)
                continue;
            running--;
            int crc = collect(r, k, status);
            if (crc == CF_OK)
                progress(r, c);
            else
                rc = crc;
            break;
        }
    }
    return rc;
}

static json_object *options_json(const conform_run *r)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    const char *fault = fault_name(r->o.fault);
    if (cf_json_add(o, "manifest", json_object_new_string(r->manifest_path)) ||
        cf_json_add(o, "targets", json_object_new_string(r->targets)) ||
        cf_json_add(o, "jobs", json_object_new_int64(r->o.jobs)) ||
        cf_json_add(o, "timeout_scale", cf_json_seconds(r->o.timeout_scale)) ||
        cf_json_add(o, "fast", json_object_new_boolean(r->o.fast)) ||
        cf_json_add(o, "differential", json_object_new_boolean(r->o.differential)) ||
        cf_json_add(o, "samples_per_checkpoint", json_object_new_int64(CF_SAMPLES_PER_CHECKPOINT)) ||
        json_object_object_add(o, "inject_fault", fault ? json_object_new_string(fault) : NULL) != 0) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

static json_object *interpreters_json(const conform_run *r)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; a && i < r->ninterps; i++) {
        const cf_interp *in = &r->manifest.items[r->interps[i]];
        json_object *o = json_object_new_object();
        if (!o || cf_json_add(o, "id", json_object_new_string(in->id)) ||
            cf_json_add(o, "version", json_object_new_string(in->version)) ||
            cf_json_add(o, "free_threaded", json_object_new_boolean(in->free_threaded)) ||
            cf_json_add(o, "debug", json_object_new_boolean(in->debug)) ||
            cf_json_add(o, "root", json_object_new_string(in->root)) || cf_json_push(a, o)) {
            json_object_put(o);
            json_object_put(a);
            return NULL;
        }
    }
    return a;
}

typedef struct totals {
    int64_t pass, fail, skip, error, not_run;
} totals;

/* Builds the report object; marks never-started cases "not_run". */
static int build_report(conform_run *r, bool interrupted, json_object **out, totals *t)
{
    json_object *root = json_object_new_object(), *cases = json_object_new_array(), *scens = json_object_new_array();
    json_object *tot = json_object_new_object();
    int rc = CF_E_NOMEM;
    memset(t, 0, sizeof *t);
    if (!root || !cases || !scens || !tot)
        goto fail;
    for (size_t s = 0; s < r->nscens; s++)
        if (cf_json_push(scens, json_object_new_string(r->index.items[r->scens[s]].name)))
            goto fail;
    for (size_t k = 0; k < r->ncases; k++) {
        case_slot *c = &r->cases[k];
        if (!c->result) {
            c->result = cf_case_stub(&r->manifest.items[c->interp], &r->index.items[c->scen], "not_run",
                                     "not started: interrupted");
            if (!c->result)
                goto fail;
        }
        const char *st = cf_json_str(c->result, "status", "");
        if (strcmp(st, "pass") == 0)
            t->pass++;
        else if (strcmp(st, "fail") == 0)
            t->fail++;
        else if (strcmp(st, "skip") == 0)
            t->skip++;
        else if (strcmp(st, "error") == 0)
            t->error++;
        else
            t->not_run++;
        if (cf_json_push(cases, json_object_get(c->result)))
            goto fail;
    }
    if (cf_json_add(tot, "cases", json_object_new_int64((int64_t)r->ncases)) ||
        cf_json_add(tot, "pass", json_object_new_int64(t->pass)) ||
        cf_json_add(tot, "fail", json_object_new_int64(t->fail)) ||
        cf_json_add(tot, "skip", json_object_new_int64(t->skip)) ||
        cf_json_add(tot, "error", json_object_new_int64(t->error)) ||
        cf_json_add(tot, "not_run", json_object_new_int64(t->not_run)))
        goto fail;
    if (cf_json_add(root, "frameproof_version", json_object_new_string(FP_VERSION_STRING)) ||
        cf_json_add(root, "interrupted", json_object_new_boolean(interrupted)) ||
        cf_json_add(root, "seconds", cf_json_seconds(cf_now() - r->started)) ||
        cf_json_add(root, "options", options_json(r)) ||
        cf_json_add(root, "interpreters", interpreters_json(r)))
        goto fail;
    rc = cf_json_add(root, "scenarios", scens);
    scens = NULL;
    if (rc == CF_OK)
        rc = cf_json_add(root, "totals", tot);
    tot = NULL;
    if (rc == CF_OK)
        rc = cf_json_add(root, "cases", cases);
    cases = NULL;
    if (rc)
        goto fail;
    *out = root;
    return CF_OK;
fail:
    json_object_put(root);
    json_object_put(cases);
    json_object_put(scens);
    json_object_put(tot);
    return CF_E_NOMEM;
}

static int write_reports(conform_run *r, json_object *report)
{
    char path[PATH_MAX], err[CF_ERRMSG_LEN];
    int rc = CF_OK;
    cf_strbuf junit, md;
    cf_sb_init(&junit);
    cf_sb_init(&md);
    if (cf_path_join(path, sizeof path, r->report, "report.json") ||
        cf_json_write_file(path, report, true, true, err, sizeof err)) {
        fprintf(stderr, "frameproof conform: %s\n", err);
        rc = CF_E_IO;
    }
    if (cf_junit_render(report, &junit) != CF_OK || cf_path_join(path, sizeof path, r->report, "junit.xml") ||
        cf_write_text_file(path, cf_sb_str(&junit), junit.len, err, sizeof err)) {
        fprintf(stderr, "frameproof conform: cannot write junit.xml: %s\n", err);
        rc = CF_E_IO;
    }
    if (cf_matrix_render(report, &md) != CF_OK || cf_path_join(path, sizeof path, r->report, "matrix.md") ||
        cf_write_text_file(path, cf_sb_str(&md), md.len, err, sizeof err)) {
        fprintf(stderr, "frameproof conform: cannot write matrix.md: %s\n", err);
        rc = CF_E_IO;
    }
    fputs(cf_sb_str(&md), stdout);
    printf("\nReports: %s/report.json, %s/junit.xml, %s/matrix.md (target logs in %s/logs/)\n", r->report,
           r->report, r->report, r->report);
    fflush(stdout);
    cf_sb_free(&junit);
    cf_sb_free(&md);
    return rc;
}

static void remove_work_dir(conform_run *r)
{
    if (!r->work[0])
        return;
    for (size_t k = 0; k < r->ncases; k++) {
        char path[PATH_MAX];
        case_file(r, k, "json", path, sizeof path);
        unlink(path);
        case_file(r, k, "pgid", path, sizeof path);
        unlink(path);
    }
    rmdir(r->work);
}

int fp_cmd_conform(int argc, char **argv)
{
    conform_run r;
    memset(&r, 0, sizeof r);
    json_object *report = NULL;
    int status = FP_EXIT_ERROR;
    r.o.pythons = calloc((size_t)argc + 1, sizeof *r.o.pythons);
    r.o.scenarios = calloc((size_t)argc + 1, sizeof *r.o.scenarios);
    if (!r.o.pythons || !r.o.scenarios) {
        fprintf(stderr, "frameproof conform: out of memory\n");
        goto out;
    }
    int st = parse_options(argc, argv, &r.o);
    if (st >= 0) {
        status = st;
        goto out;
    }
    st = load_inputs(&r);
    if (st >= 0) {
        status = st;
        goto out;
    }
    if (cf_signal_install() != CF_OK) {
        fprintf(stderr, "frameproof conform: cannot install signal handlers: %s\n", strerror(errno));
        goto out;
    }
    r.started = cf_now();
    if (prepare_dirs(&r) != CF_OK)
        goto out;
    if (build_cases(&r) != CF_OK || sync_roots(&r) != CF_OK || schedule(&r) != CF_OK) {
        fprintf(stderr, "frameproof conform: out of memory\n");
        /* Still write what is known below. */
    }
    bool interrupted = cf_interrupted();
    totals t;
    if (build_report(&r, interrupted, &report, &t) != CF_OK) {
        fprintf(stderr, "frameproof conform: out of memory building the report\n");
        goto out;
    }
    int wrc = write_reports(&r, report);
    if (interrupted)
        status = CF_EXIT_INTERRUPTED;
    else if (t.fail || t.error || t.not_run || wrc != CF_OK)
        status = FP_EXIT_ERROR;
    else
        status = FP_EXIT_OK;
out:
    remove_work_dir(&r);
    json_object_put(report);
    for (size_t k = 0; k < r.ncases; k++)
        json_object_put(r.cases[k].result);
    free(r.cases);
    free(r.interps);
    free(r.scens);
    cf_manifest_free(&r.manifest);
    cf_index_free(&r.index);
    free(r.o.pythons);
    free(r.o.scenarios);
    return status;
}
