/* live_judge.c — classifies one sample against a live declaration: every
 * thread without an error is judged rule by rule (live_judge.h), frames
 * identified through the declaration's cache, the first violation of a
 * thread recorded with its reason; then the rules of a sample of every
 * thread. */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live_decl_rep.h"
#include "live_judge.h"
#include "strbuf.h"

static const char *const RULE_NAMES[CF_RULE_COUNT] = {
    "unknown-frame", "root", "call-site", "edge", "generation", "exclusive", "line",
    "frameless", "main-missing", "thread-count",
};

const char *cf_live_rule_name(int rule)
{
    return rule >= 0 && rule < (int)CF_RULE_COUNT ? RULE_NAMES[rule] : NULL;
}

/* ------------------------------------------------------------------ */
/* Frame identities */

static bool pattern_match(const cf_live_pattern *pt, const char *function, const char *file, unsigned fields)
{
    if ((fields & CF_FIELD_FUNCTION) && fnmatch(pt->function, function, 0) != 0)
        return false;
    if (!(fields & CF_FIELD_FILE) || pt->nfiles == 0)
        return true;
    for (size_t i = 0; i < pt->nfiles; i++)
        if (fnmatch(pt->files[i], file, 0) == 0)
            return true;
    return false;
}

/* CF_LIVE_IGNORED when the frame marks a thread that is not the scenario's,
 * else the first declared function it matches, else CF_LIVE_NONE. */
static long identify_uncached(const cf_live_decl *d, const char *function, const char *file, unsigned fields)
{
    for (size_t i = 0; i < d->nignore; i++)
        if (pattern_match(&d->ignore[i], function, file, fields))
            return CF_LIVE_IGNORED;
    for (size_t i = 0; i < d->nfns; i++)
        if (pattern_match(&d->fns[i].pat, function, file, fields))
            return (long)i;
    return CF_LIVE_NONE;
}

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static int identify(cf_live_decl *d, const cf_frame *f, unsigned fields, long *out)
{
    const char *function = (fields & CF_FIELD_FUNCTION) ? f->function : "";
    const char *file = (fields & CF_FIELD_FILE) ? f->file : "";
    cf_sb_clear(&d->key);
    cf_sb_puts(&d->key, function);
    cf_sb_append(&d->key, "\x01", 1);
    cf_sb_puts(&d->key, file);
    if (d->key.failed)
        return CF_E_NOMEM;
    const char *key = cf_sb_str(&d->key);
    uint64_t h = fnv1a(key, d->key.len) ^ fields;
    size_t mask = CF_LIVE_CACHE_SLOTS - 1;
    for (size_t i = (size_t)h & mask, probes = 0; probes < CF_LIVE_CACHE_SLOTS; i = (i + 1) & mask, probes++) {
        cf_live_slot *s = &d->cache[i];
        if (!s->key) {
            long fn = identify_uncached(d, function, file, fields);
            *out = fn;
            /* Keep the table at most three quarters full. */
            if (d->cache_used >= CF_LIVE_CACHE_SLOTS / 4 * 3)
                return CF_OK;
            s->key = strdup(key);
            if (!s->key)
                return CF_E_NOMEM;
            s->hash = h;
            s->fn = fn;
            d->cache_used++;
            return CF_OK;
        }
        if (s->hash == h && strcmp(s->key, key) == 0) {
            *out = s->fn;
            return CF_OK;
        }
    }
    *out = identify_uncached(d, function, file, fields);
    return CF_OK;
}

/* ------------------------------------------------------------------ */
/* Classification */

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* "name (file:line)" on the reported fields. */
static void describe(const cf_frame *f, unsigned fields, char *buf, size_t len)
{
    int w = (int)CF_NAME_SHOWN;
    const char *fn = (fields & CF_FIELD_FUNCTION) ? f->function : "?";
    const char *file = (fields & CF_FIELD_FILE) ? base_name(f->file) : "?";
    if ((fields & CF_FIELD_LINE) && f->line != CF_POS_NONE)
        snprintf(buf, len, "%.*s (%.*s:%" PRId32 ")", w, fn, w, file, f->line);
    else
        snprintf(buf, len, "%.*s (%.*s)", w, fn, w, file);
}

static bool line_known(const cf_frame *f, unsigned fields)
{
    return (fields & CF_FIELD_LINE) && f->line != CF_POS_NONE;
}

/* The generation number of a generated function's frame, or -1. */
static long generation_of(const cf_live_fn *fd, const cf_frame *f, unsigned fields)
{
    if (!fd->gen_prefix || !(fields & CF_FIELD_FUNCTION))
        return -1;
    const char *s = f->function;
    size_t pl = strlen(fd->gen_prefix);
    if (strncmp(s, fd->gen_prefix, pl) != 0 || s[pl] < '0' || s[pl] > '9')
        return -1;
    char *end;
    errno = 0;
    long n = strtol(s + pl, &end, 10);
    if (errno || n < 0 || n > INT32_MAX / (fd->gen_stride ? fd->gen_stride : 1))
        return -1;
    return n;
}

typedef struct judge {
    cf_live_decl *d;
    const cf_sample *s;
    const cf_thread *t;
    cf_live_finding *f;
} judge;

__attribute__((format(printf, 3, 4))) static bool violate(judge *j, int rule, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    j->f->rule = rule;
    vsnprintf(j->f->reason, sizeof j->f->reason, fmt, ap);
    va_end(ap);
    return true;
}

static const cf_frame *frame_at(const judge *j, size_t i)
{
    return &j->s->frames[j->t->first + i];
}

/* The line of frame i relative to its generation's base (or as is). */
static int32_t rel_line(const judge *j, size_t i, long gen)
{
    const cf_live_fn *fd = &j->d->fns[j->d->scratch[i]];
    int32_t line = frame_at(j, i)->line;
    return gen >= 0 ? line - (int32_t)gen * fd->gen_stride : line;
}

/* Rule root: the outermost frames of the thread against the roots of the
 * kinds it may be; sets *main_kind when it matches a main kind. */
static bool check_root(judge *j, bool *main_kind)
{
    const cf_thread *t = j->t;
    const long *ids = j->d->scratch;
    bool main_known = (j->s->fields & CF_FIELD_MAIN) != 0;
    const cf_live_kind *first = NULL;
    for (size_t k = 0; k < j->d->nkinds; k++) {
        const cf_live_kind *kd = &j->d->kinds[k];
        if (main_known && kd->main != CF_UNKNOWN && kd->main != (t->main ? CF_YES : CF_NO))
            continue;
        if (!first)
            first = kd;
        for (size_t r = 0; r < kd->nroots; r++) {
            const cf_live_root *rd = &kd->roots[r];
            bool ok = t->count >= rd->len;
            for (size_t x = 0; ok && x < rd->len; x++)
                ok = ids[t->count - 1 - x] == rd->ids[x];
            if (ok) {
                *main_kind = kd->main == CF_YES;
                return false;
            }
        }
    }
    char got[2 * CF_NAME_SHOWN + 64], want[CF_LIVE_REASON_LEN / 2] = "";
    describe(frame_at(j, t->count - 1), j->s->fields, got, sizeof got);
    if (first) {
        size_t used = 0;
        for (size_t x = 0; x < first->roots[0].len && used < sizeof want; x++) {
            int n = snprintf(want + used, sizeof want - used, "%s%s", x ? " > " : "",
                             j->d->fns[first->roots[0].ids[x]].id);
            used += n > 0 ? (size_t)n : 0;
        }
    }
    if (!first)
        return violate(j, CF_RULE_ROOT, "%s thread: no declared thread kind", t->main ? "main" : "non-main");
    return violate(j, CF_RULE_ROOT, "outermost frame %s, %zu frames: matches no root of a %s thread (e.g. %s)", got,
                   t->count, first->name, want);
}

/* Rules call-site, edge and generation for caller frame i (i >= 1). */
static bool check_caller(judge *j, size_t i)
{
    const long *ids = j->d->scratch;
    const cf_live_fn *caller = &j->d->fns[ids[i]], *callee = &j->d->fns[ids[i - 1]];
    const cf_frame *fc = frame_at(j, i), *fe = frame_at(j, i - 1);
    unsigned fields = j->s->fields;
    char a[2 * CF_NAME_SHOWN + 64], b[2 * CF_NAME_SHOWN + 64];
    describe(fc, fields, a, sizeof a);
    describe(fe, fields, b, sizeof b);
    long gen = generation_of(caller, fc, fields);
    bool known = line_known(fc, fields);
    int32_t line = known ? rel_line(j, i, gen) : 0;
    bool site = false, allowed = false;
    for (size_t c = 0; c < caller->ncalls; c++) {
        const cf_live_call *r = &caller->calls[c];
        if (known && !cf_live_lines_has(&r->at, line))
            continue;
        site = true;
        for (size_t k = 0; k < r->nto && !allowed; k++)
            allowed = r->to[k] == ids[i - 1];
    }
    if (!site && caller->ncalls == 0)
        return violate(j, CF_RULE_EDGE, "%s calls nothing, yet %s is above it", a, b);
    if (!site && gen >= 0)
        return violate(j, CF_RULE_GENERATION, "%s: line %" PRId32 " is no call site of generation %ld", a,
                       fc->line, gen);
    if (!site)
        return violate(j, CF_RULE_CALL_SITE, "%s is below %s, but that line is not a call site of %s", a, b,
                       caller->id);
    if (!allowed)
        return violate(j, CF_RULE_EDGE, "%s may not call %s (not a callee of %s at that line)", a, b, caller->id);
    long cgen = generation_of(callee, fe, fields);
    if (gen >= 0 && cgen >= 0 && gen != cgen)
        return violate(j, CF_RULE_GENERATION, "%s of generation %ld calls %s of generation %ld", a, gen, b, cgen);
    return false;
}

/* Rules line and generation for the innermost frame. */
static bool check_innermost(judge *j)
{
    const cf_live_fn *fd = &j->d->fns[j->d->scratch[0]];
    const cf_frame *f = frame_at(j, 0);
    if (!line_known(f, j->s->fields))
        return false;
    long gen = generation_of(fd, f, j->s->fields);
    if (cf_live_lines_has(&fd->lines, rel_line(j, 0, gen)))
        return false;
    char a[2 * CF_NAME_SHOWN + 64];
    describe(f, j->s->fields, a, sizeof a);
    if (gen >= 0)
        return violate(j, CF_RULE_GENERATION, "innermost %s: line %" PRId32 " is not a line of generation %ld", a,
                       f->line, gen);
    return violate(j, CF_RULE_LINE, "innermost %s: line %" PRId32 " is not a line where %s can be innermost", a,
                   f->line, fd->id);
}

static bool check_exclusive(judge *j)
{
    const long *ids = j->d->scratch;
    long seen = CF_LIVE_NONE;
    size_t at = 0;
    for (size_t i = 0; i < j->t->count; i++) {
        long g = j->d->fns[ids[i]].group;
        if (g == CF_LIVE_NONE)
            continue;
        if (seen == CF_LIVE_NONE) {
            seen = g;
            at = i;
        } else if (g != seen) {
            char a[2 * CF_NAME_SHOWN + 64], b[2 * CF_NAME_SHOWN + 64];
            describe(frame_at(j, at), j->s->fields, a, sizeof a);
            describe(frame_at(j, i), j->s->fields, b, sizeof b);
            return violate(j, CF_RULE_EXCLUSIVE, "%s and %s are in one stack (exclusive groups %ld and %ld)", a, b,
                           seen + 1, g + 1);
        }
    }
    return false;
}

enum { THREAD_VALID, THREAD_WRONG, THREAD_IGNORED };

/* A frameless thread whose id another thread with frames carries: on 3.11
 * and 3.12 a thread state made for a thread that has not started yet
 * holds the ids of the thread that creates it (its main flag follows). */
static bool unbound_state(const cf_sample *s, const cf_thread *t)
{
    bool by_native = (s->fields & CF_FIELD_NATIVE_ID) != 0;
    if (!by_native && !(s->fields & CF_FIELD_THREAD_ID))
        return false;
    for (size_t i = 0; i < s->nthreads; i++) {
        const cf_thread *o = &s->threads[i];
        if (o != t && o->count > 0 && (by_native ? o->native_id == t->native_id : o->thread_id == t->thread_id))
            return true;
    }
    return false;
}

/* Judges thread t (which carries no error). */
static int judge_thread(judge *j, bool *main_kind, int *status)
{
    const cf_thread *t = j->t;
    cf_live_decl *d = j->d;
    unsigned fields = j->s->fields;
    *status = THREAD_WRONG;
    *main_kind = (fields & CF_FIELD_MAIN) && t->main;
    if (t->count == 0) {
        bool main_known = (fields & CF_FIELD_MAIN) != 0;
        if (unbound_state(j->s, t)) {
            *main_kind = false;
            if (d->frameless_workers)
                *status = THREAD_VALID;
            else
                violate(j, CF_RULE_FRAMELESS, "a thread state not yet bound to its thread (no frames, the id of "
                                              "another thread): this scenario starts no threads");
        } else if (main_known && t->main)
            violate(j, CF_RULE_FRAMELESS, "the main thread has no frames");
        else if (!d->frameless_workers)
            violate(j, CF_RULE_FRAMELESS, "a thread has no frames (every thread of this scenario runs Python)");
        else
            *status = THREAD_VALID;
        return CF_OK;
    }
    if (!(fields & CF_FIELD_FUNCTION)) {
        *status = THREAD_VALID; /* frames cannot be identified: only the thread rules apply */
        return CF_OK;
    }
    if (d->scratch_cap < t->count) {
        long *ns = realloc(d->scratch, t->count * sizeof *ns);
        if (!ns)
            return CF_E_NOMEM;
        d->scratch = ns;
        d->scratch_cap = t->count;
    }
    long unknown = CF_LIVE_NONE;
    for (size_t i = 0; i < t->count; i++) {
        int rc = identify(d, frame_at(j, i), fields, &d->scratch[i]);
        if (rc)
            return rc;
        if (d->scratch[i] == CF_LIVE_IGNORED) {
            *status = THREAD_IGNORED;
            return CF_OK;
        }
        if (d->scratch[i] == CF_LIVE_NONE && unknown == CF_LIVE_NONE)
            unknown = (long)i;
    }
    if (unknown != CF_LIVE_NONE) {
        char a[2 * CF_NAME_SHOWN + 64];
        describe(frame_at(j, (size_t)unknown), fields, a, sizeof a);
        violate(j, CF_RULE_UNKNOWN_FRAME, "frame #%ld %s matches no declared function", unknown, a);
        return CF_OK;
    }
    if (check_root(j, main_kind))
        return CF_OK;
    for (size_t i = t->count - 1; i >= 1; i--)
        if (check_caller(j, i))
            return CF_OK;
    if (check_exclusive(j) || check_innermost(j))
        return CF_OK;
    *status = THREAD_VALID;
    return CF_OK;
}

static void add_finding(cf_live_result *out, const cf_live_finding *f)
{
    out->wrong++;
    if (out->nfindings < CF_LIVE_MAX_FINDINGS)
        out->findings[out->nfindings++] = *f;
}

int cf_live_classify(cf_live_decl *d, const cf_sample *s, cf_live_result *out)
{
    memset(out, 0, sizeof *out);
    bool main_seen = false;
    for (size_t i = 0; i < s->nthreads; i++) {
        const cf_thread *t = &s->threads[i];
        if (t->error) {
            out->rejected++;
            if (!out->reject_reason)
                out->reject_reason = t->error;
            continue;
        }
        cf_live_finding f = {.thread = (long)i};
        judge j = {.d = d, .s = s, .t = t, .f = &f};
        bool main_kind = false;
        int status;
        int rc = judge_thread(&j, &main_kind, &status);
        if (rc)
            return rc;
        if (status == THREAD_IGNORED) {
            out->ignored++;
            continue;
        }
        out->checked++;
        main_seen |= main_kind || ((s->fields & CF_FIELD_MAIN) && t->main);
        if (status == THREAD_WRONG)
            add_finding(out, &f);
    }
    if ((s->fields & CF_FIELD_ALL_THREADS) && out->rejected == 0) {
        cf_live_finding f = {.thread = -1};
        if (!main_seen) {
            f.rule = CF_RULE_MAIN_MISSING;
            snprintf(f.reason, sizeof f.reason, "no main thread among the %zu threads of a sample of every thread",
                     s->nthreads);
            add_finding(out, &f);
        }
        if (out->checked < d->min_threads) {
            f.rule = CF_RULE_THREAD_COUNT;
            snprintf(f.reason, sizeof f.reason, "%zu scenario threads, the scenario runs at least %zu",
                     out->checked, d->min_threads);
            add_finding(out, &f);
        }
    }
    out->verdict = out->wrong ? CF_LIVE_WRONG : out->rejected ? CF_LIVE_REJECTED : CF_LIVE_VALID;
    return CF_OK;
}
