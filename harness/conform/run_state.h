/* run_state.h — the state of one conformance run, shared by run.c (the
 * inputs, the cases and their scheduling) and run_report.c (the report
 * built from them once every case has ended); nothing else includes it. */
#ifndef CF_RUN_STATE_H
#define CF_RUN_STATE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "manifest.h"
#include "run.h"
#include "scenarios.h"

#define SKIP_REASON_LEN 400u

enum slot_state { SLOT_PENDING, SLOT_RUNNING, SLOT_DONE };

typedef struct case_slot {
    size_t interp, scen;
    char skip[SKIP_REASON_LEN];   /* "" when the scenario applies */
    bool no_unwinder;             /* skip: no selected unwinder applies to the interpreter */
    int state;
    pid_t worker;
    double started;
    json_object *result;
} case_slot;

typedef struct conform_run {
    cf_run_opts o;
    const char **unwinder_names;   /* distinct, in the order given */
    size_t nunwinder_names;
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

typedef struct cf_run_totals {
    int64_t pass, fail, skip, error, not_run;
} cf_run_totals;

/* Builds the report object of run r (every case's result, the options,
 * interpreters and unwinders, the totals into *t); marks never-started
 * cases "not_run".  CF_OK with *out set, or CF_E_NOMEM. */
int cf_run_build_report(conform_run *r, bool interrupted, json_object **out, cf_run_totals *t);

/* Writes report.json, junit.xml and matrix.md of a parked run into its
 * report directory and prints the matrix.  CF_OK, or CF_E_IO when a file
 * could not be written (each failure said on stderr). */
int cf_run_write_reports(conform_run *r, json_object *report);

#endif
