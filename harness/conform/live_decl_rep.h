/* live_decl_rep.h — the parsed form of a live declaration, shared by its
 * parser (live_decl.c) and the judge (live_judge.c) and by no one else:
 * functions matched by qualname and file patterns, their lines, call sites
 * and callees, thread kinds with their bottom frames, ignored threads,
 * exclusive groups and generations; and the judge's working state, kept
 * with the declaration so that a sample costs a hash lookup per frame. */
#ifndef CF_LIVE_DECL_REP_H
#define CF_LIVE_DECL_REP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conform.h"
#include "live_decl.h"
#include "sample.h"
#include "strbuf.h"

#define CF_LIVE_NONE (-1L)     /* no function, no group */
#define CF_LIVE_IGNORED (-2L)  /* a frame of a thread that is not the scenario's */

typedef struct cf_live_lines {
    int32_t *v;                /* sorted, unique */
    size_t n;
    bool any;
} cf_live_lines;

typedef struct cf_live_call {
    cf_live_lines at;          /* the caller's lines (relative for generated functions) */
    long *to;                  /* callee function indexes */
    size_t nto;
} cf_live_call;

typedef struct cf_live_pattern {
    char *function;            /* fnmatch pattern on co_qualname */
    char **files;              /* fnmatch patterns on co_filename; none: any file */
    size_t nfiles;
} cf_live_pattern;

typedef struct cf_live_fn {
    char *id;
    cf_live_pattern pat;
    cf_live_lines lines;       /* where it may be the innermost frame */
    cf_live_call *calls;
    size_t ncalls;
    char *gen_prefix;          /* generated: the generation number follows this prefix */
    int32_t gen_stride;        /* generation N's lines are stride * N + relative line */
    long group;                /* exclusive group, or CF_LIVE_NONE */
} cf_live_fn;

typedef struct cf_live_root {
    size_t len;
    long ids[CF_LIVE_MAX_ROOT]; /* outermost first */
} cf_live_root;

typedef struct cf_live_kind {
    char *name;
    int main;                  /* enum cf_tristate: CF_UNKNOWN when the kind does not say */
    cf_live_root *roots;
    size_t nroots;
} cf_live_kind;

typedef struct cf_live_slot {
    char *key;                 /* function "\x01" file, or NULL when empty */
    uint64_t hash;
    long fn;                   /* function index, CF_LIVE_NONE, or CF_LIVE_IGNORED */
} cf_live_slot;

struct cf_live_decl {
    cf_live_fn *fns;
    size_t nfns;
    cf_live_kind *kinds;
    size_t nkinds;
    cf_live_pattern *ignore;
    size_t nignore;
    bool frameless_workers;    /* non-main threads may have no frames (they start and exit) */
    size_t min_threads;
    size_t ngroups;
    cf_live_slot *cache;
    size_t cache_used;
    long *scratch;             /* function index per frame of the thread being judged */
    size_t scratch_cap;
    cf_strbuf key;
};

/* True when the set holds v (a set of "any" holds every line). */
bool cf_live_lines_has(const cf_live_lines *s, int32_t v);

#endif
