/* live_case.h — one live case: a live scenario (targets/live) run freely
 * under one interpreter while every selected unwinder configuration that
 * applies samples it as fast as it can for a budget, every sample
 * classified against the scenario's declaration (live_judge.h). */
#ifndef CF_LIVE_CASE_H
#define CF_LIVE_CASE_H

#include <json-c/json.h>

#include "case.h"

/* What each configuration gets: it stops at whichever comes first. */
typedef struct cf_live_budget {
    unsigned long samples;     /* samples per configuration */
    double seconds;            /* sampling time per configuration */
} cf_live_budget;

/* Runs the case (p->fault may be a live fault, cf_fault_is_live) and builds its
 * report object: status pass (no wrong sample), fail (a configuration
 * returned a wrong sample or could not attach) or error (harness error);
 * per configuration samples, valid, rejected and wrong counts, the rate,
 * wrong samples by rule with capped examples, and rejection reasons.
 * Returns CF_OK, or CF_E_NOMEM when the object could not be built. */
int cf_live_case_run(const cf_case_params *p, const cf_live_budget *b, json_object **result);

#endif
