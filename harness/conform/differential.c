/* differential.c — runs _remote_debugging.RemoteUnwinder in the
 * interpreter's root and compares its answer with the ground truth on
 * function, file and line (see conform_differential.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "channel.h"
#include "differential.h"
#include "interrupt.h"
#include "spawn.h"
#include "strbuf.h"
#include "conform.h"
#include "util.h"

#define MAX_ERROR_TEXTS 4u
#define ERROR_TEXT_BYTES 600u

/* Prints one JSON line per thread: {"native_id": N, "frames": [[qualname,
 * file, line], ...]} innermost first; or {"unavailable": ...} or
 * {"error": ...}.  Handles both the 3.14 (list of ThreadInfo) and the 3.15
 * (list of InterpreterInfo, FrameInfo.location) result shapes. */
static const char SCRIPT[] =
    "import sys, json\n"
    "try:\n"
    "    from _remote_debugging import RemoteUnwinder\n"
    "except ImportError as e:\n"
    "    print(json.dumps({'unavailable': str(e)})); sys.exit(0)\n"
    "try:\n"
    "    st = RemoteUnwinder(int(sys.argv[1]), all_threads=True).get_stack_trace()\n"
    "except Exception as e:\n"
    "    print(json.dumps({'error': '%s: %s' % (type(e).__name__, e)})); sys.exit(0)\n"
    "def line(f):\n"
    "    loc = getattr(f, 'location', None)\n"
    "    return getattr(loc, 'lineno', None) if loc is not None else getattr(f, 'lineno', None)\n"
    "for item in st:\n"
    "    for t in (item.threads if hasattr(item, 'threads') else [item]):\n"
    "        print(json.dumps({'native_id': t.thread_id,\n"
    "                          'frames': [[f.funcname, f.filename, line(f)] for f in t.frame_info]}))\n";

int cf_diff_stats_init(cf_diff_stats *st)
{
    memset(st, 0, sizeof *st);
    st->examples = json_object_new_array();
    st->error_list = json_object_new_array();
    if (!st->examples || !st->error_list) {
        cf_diff_stats_free(st);
        return CF_E_NOMEM;
    }
    return CF_OK;
}

void cf_diff_stats_free(cf_diff_stats *st)
{
    json_object_put(st->examples);
    json_object_put(st->error_list);
    memset(st, 0, sizeof *st);
}

bool cf_differential_applies(const cf_interp *in)
{
    return in->major > CF_DIFFERENTIAL_MIN_MAJOR ||
           (in->major == CF_DIFFERENTIAL_MIN_MAJOR && in->minor >= CF_DIFFERENTIAL_MIN_MINOR);
}

static int record_error(cf_diff_stats *st, const char *text)
{
    st->errors++;
    if (json_object_array_length(st->error_list) >= MAX_ERROR_TEXTS)
        return CF_OK;
    cf_strbuf sb;
    cf_sb_init(&sb);
    size_t n = strlen(text);
    cf_sb_append_sanitized(&sb, text, n > ERROR_TEXT_BYTES ? ERROR_TEXT_BYTES : n);
    int rc = sb.failed ? CF_E_NOMEM : cf_json_push(st->error_list, json_object_new_string(cf_sb_str(&sb)));
    cf_sb_free(&sb);
    return rc;
}

static void describe(cf_strbuf *sb, const char *fn, const char *file, bool has_line, int64_t line)
{
    cf_sb_put_clipped(sb, fn ? fn : "?", CF_NAME_SHOWN);
    cf_sb_puts(sb, " (");
    cf_sb_put_clipped(sb, file ? file : "?", CF_NAME_SHOWN);
    if (has_line)
        cf_sb_printf(sb, ":%" PRId64 ")", line);
    else
        cf_sb_puts(sb, ":?)");
}

static void describe_truth(cf_strbuf *sb, const fp_frame *e)
{
    describe(sb, e->function, e->file, e->line != FP_POS_NONE, e->line);
}

static void describe_json(cf_strbuf *sb, const char *fn, const char *file, json_object *line)
{
    bool has = line && json_object_is_type(line, json_type_int);
    describe(sb, fn, file, has, has ? json_object_get_int64(line) : 0);
}

/* Compares one parked thread; appends a description to why on mismatch. */
static bool thread_agrees(const cf_truth_thread *tt, json_object *frames, cf_strbuf *why)
{
    size_t n = json_object_array_length(frames);
    for (size_t i = 0; i < tt->nframes || i < n; i++) {
        const fp_frame *e = i < tt->nframes ? &tt->frames[i] : NULL;
        json_object *a = i < n ? json_object_array_get_idx(frames, i) : NULL;
        const char *afn = NULL, *afile = NULL;
        json_object *aline = NULL;
        if (a && json_object_is_type(a, json_type_array) && json_object_array_length(a) == 3) {
            afn = json_object_get_string(json_object_array_get_idx(a, 0));
            afile = json_object_get_string(json_object_array_get_idx(a, 1));
            aline = json_object_array_get_idx(a, 2);
        }
        if (e && a) {
            bool line_ok = e->line == FP_POS_NONE
                               ? aline == NULL
                               : (aline && json_object_is_type(aline, json_type_int) &&
                                  json_object_get_int64(aline) == e->line);
            if (afn && afile && strcmp(afn, e->function) == 0 && strcmp(afile, e->file) == 0 && line_ok)
                continue;
        }
        cf_sb_printf(why, "thread %" PRIu64 ": ", tt->native_id);
        if (n != tt->nframes)
            cf_sb_printf(why, "expected %zu frames, RemoteUnwinder gave %zu; ", tt->nframes, n);
        if (e && a) {
            cf_sb_printf(why, "frame %zu: expected ", i);
            describe_truth(why, e);
            cf_sb_puts(why, " got ");
            describe_json(why, afn, afile, aline);
        } else if (e) {
            cf_sb_printf(why, "missing frame %zu: ", i);
            describe_truth(why, e);
        } else {
            cf_sb_printf(why, "extra frame %zu: ", i);
            describe_json(why, afn, afile, aline);
        }
        return false;
    }
    return true;
}

static int compare(const cf_truth *truth, json_object *threads, cf_diff_stats *st)
{
    int rc = CF_OK;
    cf_strbuf why;
    cf_sb_init(&why);
    for (size_t i = 0; i < truth->nthreads && rc == CF_OK; i++) {
        const cf_truth_thread *tt = &truth->threads[i];
        json_object *frames = NULL;
        for (size_t k = 0; k < json_object_array_length(threads); k++) {
            json_object *t = json_object_array_get_idx(threads, k);
            if ((uint64_t)cf_json_int(t, "native_id", -1) == tt->native_id) {
                frames = cf_json_array(t, "frames");
                break;
            }
        }
        cf_sb_clear(&why);
        bool ok;
        if (!frames) {
            cf_sb_printf(&why, "thread %" PRIu64 ": not reported by RemoteUnwinder", tt->native_id);
            ok = false;
        } else {
            ok = thread_agrees(tt, frames, &why);
        }
        if (ok) {
            st->agree++;
            continue;
        }
        st->disagree++;
        if (json_object_array_length(st->examples) < CF_DIFFERENTIAL_MAX_EXAMPLES) {
            cf_strbuf ex;
            cf_sb_init(&ex);
            cf_sb_printf(&ex, "checkpoint %s: %s", truth->name, cf_sb_str(&why));
            rc = ex.failed ? CF_E_NOMEM : cf_json_push(st->examples, json_object_new_string(cf_sb_str(&ex)));
            cf_sb_free(&ex);
        }
    }
    if (why.failed)
        rc = CF_E_NOMEM;
    cf_sb_free(&why);
    return rc;
}

int cf_differential_check(const cf_interp *in, int pid, const cf_truth *truth, double timeout,
                          cf_diff_stats *st)
{
    int rc = CF_OK;
    char **argv = NULL;
    int out[2] = {-1, -1};
    cf_child child;
    cf_linebuf lb;
    cf_strbuf other;
    json_object *threads = json_object_new_array();
    char err[CF_ERRMSG_LEN] = "";
    char pidstr[24];
    memset(&child, 0, sizeof child);
    cf_linebuf_init(&lb);
    cf_sb_init(&other);
    if (!threads)
        return CF_E_NOMEM;
    snprintf(pidstr, sizeof pidstr, "%d", pid);
    const char *extra[] = {"-I", "-c", SCRIPT, pidstr};
    rc = cf_argv_build(in->root, in->argv, in->argc, extra, sizeof extra / sizeof extra[0], &argv);
    if (rc)
        goto out;
    if (pipe2(out, O_CLOEXEC) != 0) {
        snprintf(err, sizeof err, "pipe: %s", strerror(errno));
        rc = record_error(st, err);
        goto out;
    }
    cf_spawn_req req = {.argv = argv, .stdout_fd = out[1], .stderr_fd = out[1], .channel = false};
    if (cf_spawn(&req, &child, err, sizeof err) != CF_OK) {
        rc = record_error(st, err);
        goto out;
    }
    close(out[1]);
    out[1] = -1;
    st->runs++;
    double deadline = cf_now() + timeout;
    bool unavailable = false, failed = false;
    for (;;) {
        char *line;
        size_t len;
        int r = cf_linebuf_read(&lb, out[0], deadline, &line, &len);
        if (r == CF_E_EOF && len == 0)
            break;
        if (r == CF_E_INTERRUPTED) {
            rc = CF_E_INTERRUPTED;
            goto out;
        }
        if (r == CF_E_TIMEOUT) {
            snprintf(err, sizeof err, "RemoteUnwinder did not finish within %.0f s", timeout);
            rc = record_error(st, err);
            failed = true;
            break;
        }
        if (r != CF_OK && r != CF_E_EOF) {
            snprintf(err, sizeof err, "reading RemoteUnwinder output: %s", cf_strerror(r));
            rc = record_error(st, err);
            failed = true;
            break;
        }
        json_object *obj = NULL;
        if (len > 0 && line[0] == '{' && cf_channel_parse(line, len, &obj, err, sizeof err) == CF_OK) {
            if (cf_json_str(obj, "unavailable", NULL))
                unavailable = true;
            else if (cf_json_str(obj, "error", NULL)) {
                snprintf(err, sizeof err, "RemoteUnwinder failed: %s", cf_json_str(obj, "error", ""));
                rc = record_error(st, err);
                failed = true;
            } else if (cf_json_push(threads, obj) != CF_OK) {
                rc = CF_E_NOMEM;
                goto out;
            } else {
                obj = NULL;
            }
            json_object_put(obj);
        } else if (len > 0) {
            cf_sb_append(&other, line, len);
            cf_sb_puts(&other, "\n");
        }
        if (r == CF_E_EOF || rc != CF_OK)
            break;
    }
    cf_child_wait_exit(&child, cf_now() + CF_EXIT_GRACE_S);
    cf_child_kill(&child);
    if (rc != CF_OK || failed)
        goto out;
    if (unavailable) {
        st->unavailable = true;
        st->runs--;
        goto out;
    }
    if (json_object_array_length(threads) == 0) {
        char status[128];
        cf_describe_status(child.status, status, sizeof status);
        cf_strbuf msg;
        cf_sb_init(&msg);
        cf_sb_printf(&msg, "RemoteUnwinder script printed no stacks (%s): ", status);
        size_t skip = other.len > ERROR_TEXT_BYTES ? other.len - ERROR_TEXT_BYTES : 0;
        cf_sb_append_sanitized(&msg, cf_sb_str(&other) + skip, other.len - skip);
        rc = msg.failed ? CF_E_NOMEM : record_error(st, cf_sb_str(&msg));
        cf_sb_free(&msg);
        goto out;
    }
    rc = compare(truth, threads, st);
out:
    cf_child_kill(&child);
    if (out[0] >= 0)
        close(out[0]);
    if (out[1] >= 0)
        close(out[1]);
    cf_argv_free(argv);
    cf_linebuf_free(&lb);
    cf_sb_free(&other);
    json_object_put(threads);
    return rc;
}

json_object *cf_diff_stats_to_json(const cf_diff_stats *st, const char *status_if_not_run)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    const char *status = st->unavailable ? "unavailable" : (st->runs || st->errors) ? "ran" : status_if_not_run;
    if (cf_json_add(o, "status", json_object_new_string(status)) ||
        cf_json_add(o, "runs", json_object_new_int64(st->runs)) ||
        cf_json_add(o, "agree", json_object_new_int64(st->agree)) ||
        cf_json_add(o, "disagree", json_object_new_int64(st->disagree)) ||
        cf_json_add(o, "errors", json_object_new_int64(st->errors)) ||
        cf_json_add(o, "error_messages", json_object_get(st->error_list)) ||
        cf_json_add(o, "examples", json_object_get(st->examples))) {
        json_object_put(o);
        return NULL;
    }
    return o;
}
