/* cmd_conform.c — `frameproof conform`: the command-line front end of the
 * conformance library (harness/conform): option parsing and --help, and
 * the unwinder configurations selected by name (harness/adapters); the
 * run itself is cf_run(). */
#include <limits.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "conform.h"
#include "conform_cli.h"
#include "fp_facts.h"
#include "install_paths.h"
#include "manifest.h"
#include "registry.h"
#include "run.h"
#include "sample.h"

static const char CONFORM_USAGE_HEAD[] =
    "usage: frameproof conform [--unwinder NAME ...] [--unwinder-cmd CMD]\n"
    "                          [--unwinder-cmd-fields LIST] [--python ID ...]\n"
    "                          [--python-path PATH ...] [--allow-untested-version]\n"
    "                          [--scenario NAME ...] [--fast] [--report-dir DIR]\n"
    "                          [--jobs N] [--manifest PATH] [--targets DIR]\n"
    "                          [--timeout-scale X]\n"
    "                          [--inject-fault drop-frame|shift-line|splice-previous|\n"
    "                                          frame-cache-by-address]\n"
    "                          [--live [--samples N] [--duration S]]\n"
    "\n"
    "Runs every ground-truth scenario (targets/scenarios) under every selected\n"
    "interpreter and puts every selected unwinder to the test.  At each\n"
    "checkpoint the target is held while each configuration of each unwinder\n"
    "samples it; every sample is compared with the in-target truth in one code\n"
    "path, on the fields that unwinder reports: for each parked thread (matched\n"
    "by native id, or by thread id for unwinders without native ids) the thread\n"
    "id, the main flag, the exception flag, and every frame (function, name,\n"
    "file, line, end_line, column, end_column, kind; same count, same order);\n"
    "an unwinder that reports every thread must report exactly the threads\n"
    "listed in all_threads.  A field an unwinder does not report is never\n"
    "compared.  Run it as root.\n"
    "\n"
    "Unwinders (--unwinder, repeatable; default frameproof):\n"
    "%s"
    "\n"
    "Options:\n"
    "  --python ID          interpreter id from the manifest (repeatable;\n"
    "                       default: every entry unless --python-path is given)\n"
    "  --python-path PATH   any interpreter binary, e.g. a fresh CPython build\n"
    "                       tree's python (repeatable); its version and build are\n"
    "                       detected by running it; no manifest needed\n"
    "  --allow-untested-version\n"
    "                       let libframeproof unwind a CPython newer than %d.%d\n"
    "                       from its own _Py_DebugOffsets; such interpreters are\n"
    "                       marked untested in every report\n"
    "  --scenario NAME      scenario name from the index (repeatable; default: all)\n"
    "  --fast               only the scenarios marked \"fast\" in the index\n"
    "  --manifest PATH      interpreter manifest (default:\n"
    "                       ${FRAMEPROOF_HOME:-" CF_DEFAULT_HOME "}/" CF_MANIFEST_NAME ")\n"
    "  --targets DIR        directory holding scenarios/index.json and groundtruth/\n"
    "                       (default: $FRAMEPROOF_TARGETS, else the first of\n"
    "                       these that holds scenarios/index.json:\n"
    "%s)\n"
    "  --report-dir DIR     reports and logs (default: ./" CF_DEFAULT_REPORT_DIR ")\n"
    "  --jobs N             cases run in parallel, each in a forked worker process\n"
    "                       (default 1, at most %u)\n"
    "  --timeout-scale X    multiply every scenario's timeout (from the index) and\n"
    "                       every foreign unwinder's time limit (%.0f s) by X\n"
    "                       (default 1.0); debug builds get a further x%.0f.  Time\n"
    "                       the target is held at checkpoints does not count.\n"
    "  --inject-fault KIND  self-test aid that proves wrong results are caught:\n"
    "                       corrupt every sample of every unwinder before\n"
    "                       comparing.  drop-frame removes the innermost frame of\n"
    "                       the first ground-truth thread (the main thread when it\n"
    "                       is parked); shift-line adds 1 to that frame's line.\n"
    "                       splice-previous (--live only) gives every thread of\n"
    "                       a sample the outer frames of its previous sample.\n"
    "                       frame-cache-by-address (--live only; unwinders that\n"
    "                       report frame addresses: frameproof) plays a frame\n"
    "                       cache keyed on the frame address alone: below the\n"
    "                       innermost frame, the first frame whose address the\n"
    "                       thread's previous sample also had is replaced, with\n"
    "                       every frame under it, by that sample's frames.\n"
    "                       Expect FAILs.\n"
    "  --help               print this help\n"
    "\n";
static const char CONFORM_USAGE_LIVE[] =
    "Live mode:\n"
    "  --live               live mode: run the live scenarios (targets/live) freely,\n"
    "                       without checkpoints; once a target says \"ready\", each\n"
    "                       configuration attaches and samples it as fast as it\n"
    "                       can for the budget, and every sample is classified\n"
    "                       against the scenario's declaration (targets/live/\n"
    "                       README.md): valid, rejected (the sample call failed or\n"
    "                       a thread carries an error) or wrong (returned as good\n"
    "                       but impossible).  Reports live.json, live.md, junit.xml;\n"
    "                       exit status 1 when a configuration returned a wrong\n"
    "                       sample or could not attach (rejections are reported,\n"
    "                       not failures)\n"
    "  --samples N          live: samples per scenario x interpreter x\n"
    "                       configuration (default %lu)\n"
    "  --duration S         live: seconds of sampling per scenario x interpreter x\n"
    "                       configuration (default %.1f); the first limit reached\n"
    "                       ends it\n"
    "\n";
static const char CONFORM_USAGE_TAIL[] =
    "Interpreters: manifest entries {\"id\", \"version\", \"free_threaded\", \"debug\",\n"
    "\"root\", \"argv\"}.  With root \"/\" the harness runs ARGV... SCRIPT; otherwise\n"
    "it copies targets/groundtruth, targets/scenarios and targets/live to\n"
    "ROOT" CF_CHROOT_TARGETS "-HASH/ (only changed files; HASH names the\n"
    "targets directory, so that two checkouts never share a copy) and runs\n"
    "chroot ROOT ARGV... " CF_CHROOT_TARGETS "-HASH/scenarios/FILE.  Scenarios whose\n"
    "min_version, max_version or builds (any, gil, ft) exclude the entry are\n"
    "skipped.  A target runs in its own process group, with stdin on /dev/null,\n"
    "without PYTHONPATH and PYTHONHOME, and with the channel on descriptors 3\n"
    "(FP_GT_RFD) and 4 (FP_GT_WFD); its whole group is killed and reaped on every\n"
    "path.  The sampled pid is the spawned pid (chroot execs the interpreter); if\n"
    "\"hello\" reports another pid, that pid is sampled and a note is recorded.\n"
    "\n"
    "Verdicts per case (scenario x interpreter) and unwinder:\n"
    "  pass   every sample of every configuration of the unwinder matched\n"
    "  FAIL   a mismatch, a failed sample or a failed attach in a configuration\n"
    "  n/a    no configuration of the unwinder applies to the interpreter\n"
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
    "               the expected and actual frames as JSON on the reported\n"
    "               fields; a sample identical to an earlier one refers to it\n"
    "               with \"same_as_sample\"); \"verdicts\" per unwinder; the\n"
    "               selected configurations with their reported fields\n"
    "  junit.xml    a testsuite per unwinder x interpreter, a testcase per\n"
    "               scenario x configuration; <failure> for mismatches, <error>\n"
    "               for harness errors, <skipped> for skips and n/a\n"
    "  matrix.md    the state of the field (cases pass/FAIL per unwinder x\n"
    "               interpreter), then per unwinder a table of scenarios x\n"
    "               interpreters, its most frequent failure classes and its\n"
    "               failing cases\n"
    "  logs/ID/SCENARIO.stdout, logs/ID/SCENARIO.stderr: the target's output\n"
    "Progress goes to stderr, one line per case; the matrix, the totals and the\n"
    "report paths go to stdout.\n"
    "\n"
    "Exit status: 0 if every case passed or was skipped for every selected\n"
    "unwinder; 1 on any FAIL (of any selected unwinder) or harness error,\n"
    "or if the manifest, index or report directory is unusable; 2 on a usage\n"
    "error (also an unknown interpreter, scenario or unwinder); 130 after SIGINT or SIGTERM (no new cases start, running targets\n"
    "are killed, partial reports are written).\n";


typedef struct cli_lists {
    const char **pythons, **paths, **scenarios, **unwinders;
    size_t npythons, npaths, nscenarios, nunwinders;
} cli_lists;

static void print_usage(FILE *f)
{
    char defaults[4 * PATH_MAX];
    if (cf_default_targets_describe(defaults, sizeof defaults, "                         "))
        snprintf(defaults, sizeof defaults, "(paths too long)");
    fprintf(f, CONFORM_USAGE_HEAD, cf_unwinder_help(), FP_FACT_PY_MAJOR, FP_FACT_PY_MINOR_MAX, defaults,
            CF_MAX_JOBS, CF_ADAPTER_TIMEOUT_S, CF_DEBUG_TIMEOUT_FACTOR);
    fprintf(f, CONFORM_USAGE_LIVE, CF_LIVE_DEFAULT_SAMPLES, CF_LIVE_DEFAULT_SECONDS);
    fputs(CONFORM_USAGE_TAIL, f);
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("frameproof conform: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\n(see frameproof conform --help)\n", stderr);
    return CLI_EXIT_USAGE;
}

/* Returns -1 on success, else the exit status to return. */
static int parse_options(int argc, char **argv, cf_run_opts *o, cli_lists *l)
{
    enum {
        O_PY = 1, O_PYPATH, O_SCEN, O_FAST, O_REPORT, O_JOBS, O_MANIFEST, O_TARGETS, O_SCALE, O_FAULT,
        O_UNWINDER, O_CMD, O_CMD_FIELDS, O_UNTESTED, O_LIVE, O_SAMPLES, O_DURATION, O_HELP
    };
    static const struct option longopts[] = {
        {"python", required_argument, NULL, O_PY},
        {"python-path", required_argument, NULL, O_PYPATH},
        {"scenario", required_argument, NULL, O_SCEN},
        {"fast", no_argument, NULL, O_FAST},
        {"report-dir", required_argument, NULL, O_REPORT},
        {"jobs", required_argument, NULL, O_JOBS},
        {"manifest", required_argument, NULL, O_MANIFEST},
        {"targets", required_argument, NULL, O_TARGETS},
        {"timeout-scale", required_argument, NULL, O_SCALE},
        {"inject-fault", required_argument, NULL, O_FAULT},
        {"unwinder", required_argument, NULL, O_UNWINDER},
        {"unwinder-cmd", required_argument, NULL, O_CMD},
        {"unwinder-cmd-fields", required_argument, NULL, O_CMD_FIELDS},
        {"allow-untested-version", no_argument, NULL, O_UNTESTED},
        {"live", no_argument, NULL, O_LIVE},
        {"samples", required_argument, NULL, O_SAMPLES},
        {"duration", required_argument, NULL, O_DURATION},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    o->jobs = 1;
    o->timeout_scale = 1.0;
    o->report_dir = CF_DEFAULT_REPORT_DIR;
    int c;
    unsigned long v;
    unsigned mask;
    char bad[64];
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_PY: l->pythons[l->npythons++] = optarg; break;
        case O_PYPATH: l->paths[l->npaths++] = optarg; break;
        case O_SCEN: l->scenarios[l->nscenarios++] = optarg; break;
        case O_UNWINDER: l->unwinders[l->nunwinders++] = optarg; break;
        case O_FAST: o->fast = true; break;
        case O_UNTESTED: o->adapter.allow_untested = true; break;
        case O_CMD:
            if (!strstr(optarg, "{pid}"))
                return usage_error("--unwinder-cmd must contain {pid}: '%s'", optarg);
            o->adapter.command = optarg;
            break;
        case O_CMD_FIELDS:
            if (cf_fields_parse(optarg, &mask, bad, sizeof bad) != 0)
                return usage_error("--unwinder-cmd-fields: unknown field '%s'", bad);
            o->adapter.command_fields = optarg;
            break;
        case O_REPORT:
            if (!*optarg)
                return usage_error("--report-dir must not be empty%s", "");
            o->report_dir = optarg;
            break;
        case O_JOBS:
            if (cli_parse_uint(optarg, CF_MAX_JOBS, &v) || v == 0)
                return usage_error("--jobs must be an integer from 1 to 256, not '%s'", optarg);
            o->jobs = (unsigned)v;
            break;
        case O_MANIFEST: o->manifest = optarg; break;
        case O_TARGETS: o->targets = optarg; break;
        case O_SCALE:
            if (cli_parse_positive(optarg, CF_MAX_TIMEOUT_SCALE, &o->timeout_scale))
                return usage_error("--timeout-scale must be a number > 0 and <= 1000, not '%s'", optarg);
            break;
        case O_LIVE: o->live = true; break;
        case O_SAMPLES:
            if (cli_parse_uint(optarg, CF_LIVE_MAX_SAMPLES, &v) || v == 0)
                return usage_error("--samples must be an integer from 1 to 100000000, not '%s'", optarg);
            o->live_samples = v;
            break;
        case O_DURATION:
            if (cli_parse_positive(optarg, CF_LIVE_MAX_SECONDS, &o->live_seconds))
                return usage_error("--duration must be a number of seconds > 0 and <= 3600, not '%s'", optarg);
            break;
        case O_FAULT:
            if (strcmp(optarg, "drop-frame") == 0)
                o->fault = CF_FAULT_DROP_FRAME;
            else if (strcmp(optarg, "shift-line") == 0)
                o->fault = CF_FAULT_SHIFT_LINE;
            else if (strcmp(optarg, "splice-previous") == 0)
                o->fault = CF_FAULT_SPLICE_PREVIOUS;
            else if (strcmp(optarg, "frame-cache-by-address") == 0)
                o->fault = CF_FAULT_CACHE_BY_ADDRESS;
            else
                return usage_error("--inject-fault must be drop-frame, shift-line, splice-previous or "
                                   "frame-cache-by-address, not '%s'", optarg);
            break;
        case O_HELP:
        case 'h':
            print_usage(stdout);
            return CLI_EXIT_OK;
        default:
            fputs("(see frameproof conform --help)\n", stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (!o->live && (o->live_samples || o->live_seconds > 0))
        return usage_error("--samples and --duration go with --live%s", "");
    if (o->live != cf_fault_is_live(o->fault) && o->fault != CF_FAULT_NONE)
        return usage_error("--inject-fault %s", o->live ? "in live mode must be splice-previous or frame-cache-by-address"
                                                         : "splice-previous and frame-cache-by-address go with --live");
    if (o->live && o->fast)
        return usage_error("--fast does not apply to --live%s", "");
    bool command = false;
    for (size_t i = 0; i < l->nunwinders; i++)
        command |= strncmp(l->unwinders[i], "command", strlen("command")) == 0 &&
                   (l->unwinders[i][strlen("command")] == '\0' || l->unwinders[i][strlen("command")] == ':');
    if (command && !o->adapter.command)
        return usage_error("--unwinder command needs --unwinder-cmd 'CMD ... {pid}'%s", "");
    if (!command && (o->adapter.command || o->adapter.command_fields))
        return usage_error("--unwinder-cmd and --unwinder-cmd-fields go with --unwinder command%s", "");
    return -1;
}

/* The configurations of the named unwinders ("frameproof" when none is
 * named) into o->adapters: -1, else the exit status. */
static int select_adapters(cf_run_opts *o, cf_adapter_set *set)
{
    static const char *const DEFAULT[] = {"frameproof"};
    if (!o->nunwinders) {
        o->unwinders = DEFAULT;
        o->nunwinders = 1;
    }
    char err[CF_ERRMSG_LEN];
    int rc = cf_adapter_set_build(o->unwinders, o->nunwinders, &o->adapter, set, err, sizeof err);
    if (rc == CF_E_NOMEM) {
        fprintf(stderr, "frameproof conform: out of memory\n");
        return CF_EXIT_FAIL;
    }
    if (rc) {
        fprintf(stderr, "frameproof conform: %s\n", err);
        return CF_EXIT_USAGE;
    }
    o->adapters = set;
    return -1;
}

int cli_cmd_conform(int argc, char **argv)
{
    cf_run_opts o;
    cli_lists l;
    cf_adapter_set adapters;
    memset(&o, 0, sizeof o);
    memset(&l, 0, sizeof l);
    memset(&adapters, 0, sizeof adapters);
    int status = CLI_EXIT_ERROR;
    size_t n = (size_t)argc + 1;
    l.pythons = calloc(n, sizeof *l.pythons);
    l.paths = calloc(n, sizeof *l.paths);
    l.scenarios = calloc(n, sizeof *l.scenarios);
    l.unwinders = calloc(n, sizeof *l.unwinders);
    if (!l.pythons || !l.paths || !l.scenarios || !l.unwinders) {
        fprintf(stderr, "frameproof conform: out of memory\n");
        goto out;
    }
    status = parse_options(argc, argv, &o, &l);
    if (status >= 0)
        goto out;
    o.pythons = l.pythons;
    o.npythons = l.npythons;
    o.python_paths = l.paths;
    o.npython_paths = l.npaths;
    o.scenarios = l.scenarios;
    o.nscenarios = l.nscenarios;
    o.unwinders = l.unwinders;
    o.nunwinders = l.nunwinders;
    status = select_adapters(&o, &adapters);
    if (status >= 0)
        goto out;
    status = cf_run(&o);
out:
    cf_adapter_set_free(&adapters);
    free(l.pythons);
    free(l.paths);
    free(l.scenarios);
    free(l.unwinders);
    return status;
}
