/* differential.h — the informational differential check: at a
 * checkpoint, CPython's own _remote_debugging.RemoteUnwinder (3.14+) is
 * run against the target and its stacks are compared with the ground truth
 * on function, file and line.  Never affects the verdict. */
#ifndef FP_CONFORM_DIFFERENTIAL_H
#define FP_CONFORM_DIFFERENTIAL_H

#include <stdbool.h>

#include <json-c/json.h>

#include "manifest.h"
#include "truth.h"

/* _remote_debugging.RemoteUnwinder first shipped with CPython 3.14. */
#define CF_DIFFERENTIAL_MIN_MAJOR 3
#define CF_DIFFERENTIAL_MIN_MINOR 14

typedef struct cf_diff_stats {
    unsigned runs;         /* checkpoints at which the script ran */
    unsigned agree;        /* parked threads whose stack matched */
    unsigned disagree;     /* parked threads whose stack did not */
    unsigned errors;       /* runs that failed */
    bool unavailable;      /* the interpreter has no RemoteUnwinder */
    json_object *examples; /* array: descriptions of disagreements (capped) */
    json_object *error_list; /* array: error texts (capped) */
} cf_diff_stats;

int cf_diff_stats_init(cf_diff_stats *st);
void cf_diff_stats_free(cf_diff_stats *st);

/* True when the interpreter's version may have RemoteUnwinder. */
bool cf_differential_applies(const cf_interp *in);

/* Runs the RemoteUnwinder script against pid (through chroot when needed)
 * and compares its stacks with the truth's parked threads.  Failures of the
 * check itself are recorded in st.  Returns CF_OK, CF_E_NOMEM or
 * CF_E_INTERRUPTED. */
int cf_differential_check(const cf_interp *in, int pid, const cf_truth *truth, double timeout,
                          cf_diff_stats *st);

/* {"status", "runs", "agree", "disagree", "errors", "error_messages",
 * "examples"}; status is one of ran, unavailable, disabled or
 * not-applicable (given when the check did not run). */
json_object *cf_diff_stats_to_json(const cf_diff_stats *st, const char *status_if_not_run);

#endif
