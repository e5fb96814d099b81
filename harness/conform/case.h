/* case.h — one conformance case: one scenario run under one
 * interpreter, sampled at every checkpoint by every selected unwinder
 * configuration (adapter) that applies to the interpreter, each sample
 * compared with the ground truth. */
#ifndef CF_CASE_H
#define CF_CASE_H

#include <stdbool.h>

#include <json-c/json.h>

#include "adapter.h"
#include "manifest.h"
#include "scenarios.h"

typedef struct cf_case_params {
    const cf_interp *interp;
    const cf_scenario *scen;
    const char *targets_dir;   /* absolute host path of targets/ */
    const char *log_dir;       /* absolute directory for the target's stdout/stderr */
    const char *log_rel;       /* the same directory relative to the report dir */
    const char *pgid_path;     /* file holding the target's process group while it runs */
    const cf_adapter_set *adapters; /* the configurations under test */
    double timeout_scale;
    int fault;                 /* enum cf_fault */
    bool allow_untested;       /* --allow-untested-version */
} cf_case_params;

/* Runs the case and builds its report object (see `frameproof conform
 * --help` for the schema): status pass, fail or error; every failure is
 * inside the object.  Returns CF_OK, or CF_E_NOMEM when the object could
 * not be built. */
int cf_case_run(const cf_case_params *p, json_object **result);

/* The report object of a case that did not run the target: status "skip"
 * (with reason), "not_run" or "error" (with reason). */
json_object *cf_case_stub(const cf_interp *in, const cf_scenario *s, const char *status, const char *reason);

#endif
