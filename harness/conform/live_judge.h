/* live_judge.h — the classification of one cf_sample against a live
 * declaration (live_decl.h): valid, rejected (a thread carries the
 * unwinder's error) or wrong (returned as good but impossible), with a
 * one-line reason per wrong thread. */
#ifndef CF_LIVE_JUDGE_H
#define CF_LIVE_JUDGE_H

#include <stddef.h>

#include "conform.h"
#include "live_decl.h"
#include "sample.h"

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

#endif
