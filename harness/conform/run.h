/* run.h — a whole conformance run: selects interpreters (manifest entries
 * and interpreter binaries given by path) and scenarios, runs every case
 * with each unwinder configuration it is handed in a forked worker (up to
 * `jobs` at a time), handles SIGINT/SIGTERM, and writes report.json,
 * junit.xml and matrix.md.  The command-line front end parses options and
 * builds the configurations by name (adapters/registry.h). */
#ifndef CF_RUN_H
#define CF_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "adapter.h"

/* Exit statuses of a run. */
#define CF_EXIT_OK 0
#define CF_EXIT_FAIL 1    /* a FAIL, a harness error, or unusable inputs */
#define CF_EXIT_USAGE 2   /* an unknown interpreter, scenario or unwinder */

#define CF_DEFAULT_REPORT_DIR "conform-report"

typedef struct cf_run_opts {
    const char *const *pythons;        /* manifest ids; none: every entry (unless paths are given) */
    size_t npythons;
    const char *const *python_paths;   /* interpreter binaries, probed for version and build */
    size_t npython_paths;
    const char *const *scenarios;      /* none: every scenario */
    size_t nscenarios;
    const cf_adapter_set *adapters;    /* the configurations under test, built by the caller */
    const char *const *unwinders;      /* the names they were built from, for the report (at least one) */
    size_t nunwinders;
    cf_adapter_opts adapter;           /* what they were built with, for the report; allow_untested also
                                          for the targets */
    bool fast;                         /* only the scenarios marked fast */
    const char *report_dir;            /* NULL: CF_DEFAULT_REPORT_DIR */
    const char *manifest;              /* NULL: $FRAMEPROOF_HOME's manifest */
    const char *targets;               /* NULL: $FRAMEPROOF_TARGETS, else cf_default_targets_dir() */
    unsigned jobs;
    double timeout_scale;
    int fault;                         /* enum cf_fault */
    bool live;                         /* live mode: targets/live, live_case.h, live.json and live.md */
    unsigned long live_samples;        /* live budget per configuration (0: CF_LIVE_DEFAULT_SAMPLES) */
    double live_seconds;               /* idem, in seconds (0: CF_LIVE_DEFAULT_SECONDS) */
} cf_run_opts;

/* Runs the suite.  Progress goes to stderr, the matrix and the report
 * paths to stdout.  Returns CF_EXIT_OK when every case passed or was
 * skipped for every selected unwinder, CF_EXIT_FAIL, CF_EXIT_USAGE, or
 * CF_EXIT_INTERRUPTED. */
int cf_run(const cf_run_opts *o);

/* "drop-frame", "shift-line", "splice-previous", or NULL. */
const char *cf_fault_name(int fault);

#endif
