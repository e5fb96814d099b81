/* live_check.h — what any correct sample of a running live scenario must
 * satisfy (its declaration, targets/live/NAME.decl.json, format in
 * targets/live/README.md) and the classification of one cf_sample against
 * it: valid, rejected (a thread carries the unwinder's error) or wrong
 * (returned as good but impossible), with a one-line reason per wrong
 * thread.  Also the splice-previous self-test fault of live mode. */
#ifndef FP_CONFORM_LIVE_CHECK_H
#define FP_CONFORM_LIVE_CHECK_H

#include <stddef.h>

#include <json-c/json.h>

#include "conform.h"
#include "sample.h"

typedef struct cf_live_decl cf_live_decl;

/* Parses a declaration object.  Line specifications "@tag" are resolved
 * against script (the scenario's source text: every line whose comment
 * holds the token @tag); script may be NULL when no tag is used.  Returns
 * CF_OK, CF_E_FORMAT with the reason in err, or CF_E_NOMEM. */
int cf_live_decl_parse(json_object *decl, const char *script, cf_live_decl **out, char *err, size_t errlen);

/* Reads the declaration file and the scenario's source and parses them. */
int cf_live_decl_load(const char *decl_path, const char *script_path, cf_live_decl **out, char *err,
                      size_t errlen);

void cf_live_decl_free(cf_live_decl *d);

enum cf_live_verdict { CF_LIVE_VALID = 0, CF_LIVE_REJECTED = 1, CF_LIVE_WRONG = 2 };

/* The rules a wrong thread (or sample) violates; names in cf_live_rule_name. */
enum cf_live_rule {
    CF_RULE_UNKNOWN_FRAME = 0, /* a frame no declared function matches */
    CF_RULE_ROOT,              /* the outermost frames match no root of a thread kind */
    CF_RULE_CALL_SITE,         /* a caller stands at a line that is not one of its call sites */
    CF_RULE_EDGE,              /* a caller's call site may not call the frame above it */
    CF_RULE_GENERATION,        /* a generated function shown with another generation's line or callee */
    CF_RULE_EXCLUSIVE,         /* frames of two exclusive groups in one stack */
    CF_RULE_LINE,              /* the innermost frame at a line its function does not have */
    CF_RULE_FRAMELESS,         /* a thread that must run Python has no frames */
    CF_RULE_MAIN_MISSING,      /* a sample of every thread without the main thread */
    CF_RULE_THREAD_COUNT,      /* a sample of every thread with fewer threads than declared */
    CF_RULE_COUNT
};

/* "unknown-frame", "root", ...; NULL when out of range. */
const char *cf_live_rule_name(int rule);

typedef struct cf_live_finding {
    int rule;                  /* enum cf_live_rule */
    long thread;               /* index in the sample's threads, -1 for a sample-level rule */
    char reason[CF_LIVE_REASON_LEN];
} cf_live_finding;

typedef struct cf_live_result {
    int verdict;               /* enum cf_live_verdict */
    size_t checked;            /* threads judged */
    size_t ignored;            /* threads the declaration says are not the scenario's */
    size_t rejected;           /* threads carrying an error */
    size_t wrong;              /* wrong threads plus sample-level findings */
    size_t nfindings;          /* recorded findings (at most CF_LIVE_MAX_FINDINGS) */
    cf_live_finding findings[CF_LIVE_MAX_FINDINGS];
    const char *reject_reason; /* the first thread error (points into the sample), or NULL */
} cf_live_result;

/* Classifies a sample the adapter returned as good: wrong when a finding
 * exists (a thread returned without an error violates the declaration),
 * else rejected when a thread carries an error, else valid.  Fields the
 * sample does not report are not judged.  The declaration caches frame
 * identities, so it is not const.  CF_OK or CF_E_NOMEM. */
int cf_live_classify(cf_live_decl *d, const cf_sample *s, cf_live_result *out);

/* --inject-fault splice-previous: out receives cur, except that for every
 * thread that also appears in prev (matched like cf_sample_find) where both
 * stacks have at least two frames and differ (function, file or line of a
 * frame), the thread keeps only its innermost frame and gets prev's outer
 * frames (all but prev's innermost) under it: the result of an unwinder
 * that spliced a stale cached parent chain.  out's strings point into cur
 * and prev.  Returns the number of threads spliced, or CF_E_NOMEM. */
int cf_live_splice(const cf_sample *cur, const cf_sample *prev, cf_sample *out);

/* --inject-fault frame-cache-by-address: out receives cur, except that for
 * every thread also in prev, the first frame below the innermost whose
 * frame_addr (non-zero) prev's thread also has is replaced, with every
 * frame under it, by prev's frames from that address down: the result of
 * an unwinder whose frame cache is keyed on the frame address alone, when
 * another call chain reused the address.  Returns the number of threads
 * whose stack this changed, or CF_E_NOMEM. */
int cf_live_cache_by_address(const cf_sample *cur, const cf_sample *prev, cf_sample *out);

#endif
