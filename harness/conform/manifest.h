/* manifest.h — the interpreter manifest (interpreters.json) read by
 * `frameproof conform`: {"interpreters": [{"id", "version", "free_threaded",
 * "debug", "root", "argv", and optionally "jit" (bool), "env" (an object
 * of string values) and "modules" (the optional modules provisioning found
 * importable, e.g. ["greenlet"])}]}. */
#ifndef CF_MANIFEST_H
#define CF_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "fp_facts.h"

/* Default manifest directory when FRAMEPROOF_HOME is unset (facts.env). */
#define CF_DEFAULT_HOME FP_FACT_FRAMEPROOF_HOME_DEFAULT
#define CF_MANIFEST_NAME FP_FACT_MANIFEST_NAME

typedef struct cf_interp {
    char *id;              /* "3.15", "3.13t", ... */
    char *version;         /* "3.15.2" */
    char *root;            /* "/" or the chroot directory */
    char **argv;           /* NULL-terminated command that runs the interpreter */
    size_t argc;
    /* The entry's "env": NAME=VALUE strings (NULL-terminated, never NULL
     * once loaded; empty without "env") put into every target's environment
     * on top of the harness's own, e.g. PYTHON_JIT=1 for a "+jit" id, which
     * runs the same binary as its base id with the JIT turned on. */
    char **env;
    size_t envc;
    bool free_threaded;
    bool debug;
    bool jit;              /* "jit": provisioning saw sys._jit.is_enabled() True */
    char *modules;         /* "modules", space-separated; NULL when the entry does not say */
    int major, minor;      /* parsed from version */
} cf_interp;

typedef struct cf_manifest {
    cf_interp *items;
    size_t count;
} cf_manifest;

int cf_manifest_load(const char *path, cf_manifest *out, char *err, size_t errlen);

/* $FRAMEPROOF_HOME/interpreters.json, with the default home when the
 * variable is unset or empty; CF_E_LIMIT when it does not fit. */
int cf_manifest_default_path(char *out, size_t len);

/* Validates one entry object and appends it (ids must stay unique). */
int cf_manifest_add(cf_manifest *m, json_object *entry, char *err, size_t errlen);
void cf_manifest_free(cf_manifest *m);

/* Index of the interpreter with this id, or -1. */
long cf_manifest_find(const cf_manifest *m, const char *id);

/* True when the interpreter is newer than the newest CPython the unwinder
 * supports (unwound only on request, from its own debug offsets). */
bool cf_interp_untested(const cf_interp *in);

/* True when the interpreter runs in a root other than "/". */
bool cf_interp_chrooted(const cf_interp *in);

/* Parses "3.15" or "3.15.2..." into major and minor; CF_E_FORMAT if not. */
int cf_parse_version(const char *s, int *major, int *minor);

#endif
