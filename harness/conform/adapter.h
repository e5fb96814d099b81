/* adapter.h — the unwinder under test.  An adapter configuration
 * (cf_adapter_def) says which unwinder it is, which interpreters it applies
 * to and which fields it reports, and attaches to a parked target, takes
 * one sample at a time into a harness-owned cf_sample, and detaches.  The
 * case runner drives every configuration through these calls alone and
 * compares each sample with the ground truth in one code path. */
#ifndef CF_ADAPTER_H
#define CF_ADAPTER_H

#include <stdbool.h>
#include <stddef.h>

#include "manifest.h"
#include "sample.h"

/* The target an adapter attaches to. */
typedef struct cf_target {
    int pid;                   /* the process to sample (host pid namespace) */
    const cf_interp *interp;   /* its interpreter: version, build, root, argv */
    double timeout;            /* seconds one foreign run may take (already scaled) */
    bool allow_untested;       /* the user allows unwinding CPython newer than the newest supported */
} cf_target;

typedef struct cf_adapter_def cf_adapter_def;

struct cf_adapter_def {
    const char *unwinder;      /* what --unwinder selects: "frameproof", "cpython", "austin", "command" */
    const char *config;        /* this configuration of it ("vm+cache", "cache-on"); "" for the only one */
    unsigned fields;           /* enum cf_field: fields it can report (a sample may report fewer) */
    unsigned samples_per_checkpoint;
    /* NULL when the configuration applies to the interpreter, else why not
     * (written into buf).  NULL pointer: applies everywhere. */
    const char *(*applies)(const cf_adapter_def *d, const cf_interp *in, char *buf, size_t len);
    /* Attaches; on failure returns CF_E_UNWINDER (or CF_E_TIMEOUT) with the
     * reason in err, CF_E_NOMEM, or CF_E_INTERRUPTED. */
    int (*attach)(const cf_adapter_def *d, const cf_target *t, void **state, char *err, size_t errlen);
    /* Takes one sample into out (already reset to d->fields; the adapter may
     * narrow out->fields).  CF_OK: out holds the sample, threads whose walk
     * failed carry an error; CF_E_UNWINDER or CF_E_TIMEOUT: the unwinder
     * gave no sample (reason in err); CF_E_NOMEM; CF_E_INTERRUPTED. */
    int (*sample)(void *state, cf_sample *out, char *err, size_t errlen);
    /* Releases everything attach made (stops helper processes).  Accepts
     * NULL. */
    void (*detach)(void *state);
    /* Optional: one line that identifies what was attached (versions,
     * reader), for the report; NULL pointer or NULL result: nothing. */
    const char *(*info)(void *state);
    const void *data;          /* configuration data of the implementation */
    bool named_only;           /* run only when selected as unwinder:config, not with the unwinder's name */
};

/* "unwinder" or "unwinder:config". */
void cf_adapter_label(const cf_adapter_def *d, char *buf, size_t len);

/* Writes why the configuration does not apply to the interpreter into na
 * ("" when it applies). */
void cf_adapter_na(const cf_adapter_def *d, const cf_interp *in, char *na, size_t len);

/* What the user asked for besides the unwinder names. */
typedef struct cf_adapter_opts {
    const char *command;       /* --unwinder-cmd template ("{pid}" is replaced) */
    const char *command_fields; /* --unwinder-cmd-fields list, or NULL: from the output */
    const char *austin;        /* austin binary inside each interpreter's root, or NULL: default */
    bool allow_untested;       /* unwind CPython newer than the newest supported one */
} cf_adapter_opts;

/* The selected configurations, in report order. */
typedef struct cf_adapter_set {
    cf_adapter_def *defs;
    size_t count;
    char **owned;              /* strings allocated for the defs */
    size_t nowned;
} cf_adapter_set;

/* Releases the set (cf_adapter_set_build in adapters/registry.h builds
 * one); accepts a zeroed set. */
void cf_adapter_set_free(cf_adapter_set *s);

#endif
