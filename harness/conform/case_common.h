/* case_common.h — the skeleton a parked case (case.c) and a live case
 * (live_case.c) share: the target with its channel and logs, the harness
 * error and the notes, what every configuration has, the launch, and the
 * parts of the report object both write. */
#ifndef CF_CASE_COMMON_H
#define CF_CASE_COMMON_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "adapter.h"
#include "case.h"
#include "channel.h"
#include "conform.h"
#include "spawn.h"
#include "strbuf.h"

/* What a configuration has in either mode. */
typedef struct cf_case_cfg {
    const cf_adapter_def *def;
    char label[CF_NAME_SHOWN];
    char na[CF_REASON_LEN];    /* why it does not apply to the interpreter; "" when it does */
    char info[CF_INFO_LEN];
    json_object *failures;
    bool failed;               /* it failed; set by the runner before the report is built */
} cf_case_cfg;

typedef struct cf_case_core {
    const cf_case_params *p;
    cf_child child;
    cf_linebuf lb;
    int out_fd, err_fd;
    char out_path[PATH_MAX], err_path[PATH_MAX];
    int sample_pid;
    json_object *hello;
    json_object *notes;
    cf_case_cfg *cfg;          /* one per p->adapters->defs */
    size_t ncfg;
    cf_strbuf error;           /* harness error; empty when none */
    bool interrupted, done;
    double started, timeout, deadline;
} cf_case_core;

/* Sets every field, the configurations' labels and applicability
 * included.  CF_OK or CF_E_NOMEM; cf_case_core_free is due either way. */
int cf_case_core_init(cf_case_core *c, const cf_case_params *p);

/* Starts the clock: the scenario's timeout, scaled, from now. */
void cf_case_core_start(cf_case_core *c);

/* Kills and reaps the target's group, closes its channel and logs, frees
 * the rest. */
void cf_case_core_free(cf_case_core *c);

/* Records a harness error (the first one wins).  Returns CF_OK (or
 * CF_E_NOMEM), so that callers can `return cf_case_fail(...)` and stop on
 * c->error.len. */
__attribute__((format(printf, 2, 3))) int cf_case_fail(cf_case_core *c, const char *fmt, ...);

/* Adds a note to the report. */
int cf_case_note(cf_case_core *c, const char *text);

/* seconds scaled by --timeout-scale and the debug build factor. */
double cf_case_scaled(const cf_case_core *c, double seconds);

/* Starts the target (the scenario's script in subdir of targets/) and
 * samples its pid from now on; a failure is a harness error of the case. */
int cf_case_launch(cf_case_core *c, const char *subdir);

/* "hello" named another pid than the spawned one: samples it, with a note. */
int cf_case_hello_pid(cf_case_core *c, int64_t pid);

/* The target's "error" event, recorded as the harness error. */
int cf_case_target_error(cf_case_core *c, json_object *msg);

/* The first line of the harness error, at most shown bytes of it. */
void cf_case_error_summary(const cf_case_core *c, size_t shown, char *buf, size_t len);

/* The report object's opening keys, in this order: interpreter, scenario,
 * mode (when not NULL), status, summary, seconds, then for a parked case
 * (checkpoints not NULL) timeout, then pid, sampled_pid, python,
 * checkpoints (parked), notes, and for a harness error, error and
 * interrupted.  CF_OK or CF_E_NOMEM. */
int cf_case_result_head(json_object *o, const cf_case_core *c, const char *mode, const char *status,
                        const char *summary, json_object *checkpoints);

/* A configuration's report keys unwinder, configuration, name and status. */
int cf_case_cfg_head(json_object *o, const cf_case_cfg *cfg, const char *status);

/* Its keys reason (when it does not apply) and info (when it has some). */
int cf_case_cfg_about(json_object *o, const cf_case_cfg *cfg);

/* {unwinder: verdict}: "error" on a harness error, else "fail" when a
 * configuration of the unwinder failed, "n/a" when none applies, else
 * "pass".  NULL when out of memory. */
json_object *cf_case_verdicts_json(const cf_case_core *c, bool error);

#endif
