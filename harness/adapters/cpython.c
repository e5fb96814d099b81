/* cpython.c — the `cpython` adapter: CPython's own
 * _remote_debugging.RemoteUnwinder (3.14+), run by the target's own
 * interpreter inside its root as a persistent helper.  attach starts the
 * helper, which builds one RemoteUnwinder(pid, all_threads=True) kept for
 * the whole session (as a profiler keeps it: the frame and code caches
 * live in it); each sample writes one request line and reads one JSON
 * answer line; detach closes the request pipe and kills the helper.
 *
 * What RemoteUnwinder reports (checked on the 3.14 and 3.15 builds):
 *   both:  funcname = co_qualname (read with a 1024-byte cap), filename =
 *          co_filename, thread_id = the native (kernel) thread id, every
 *          thread of the process with all_threads=True; no co_name, no
 *          generator/python distinction.
 *   3.14:  FrameInfo(filename, lineno, funcname), ThreadInfo(thread_id,
 *          frame_info), a flat list of threads.
 *   3.15:  FrameInfo.location = LocationInfo(lineno, end_lineno,
 *          col_offset, end_col_offset), -1 where co_positions() gives
 *          None, or None when it could not read the line table (all four
 *          unknown); ThreadInfo.status with THREAD_STATUS_MAIN_THREAD and
 *          THREAD_STATUS_HAS_EXCEPTION; a list of InterpreterInfo.
 * The helper announces which of these its module has, and the sample
 * declares exactly those fields.  Configuration cache-on+colocate (named
 * only) moves the helper, before each request, to the CPU on which the
 * last sample's GIL holder (THREAD_STATUS_HAS_GIL), else its main thread,
 * last ran (colocate.h), as frameproof:vm+cache+colocate moves its own
 * sampling thread: the same policy for both unwinders. */
#include "colocate.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter.h"
#include "channel.h"
#include "conform.h"
#include "registry.h"
#include "spawn.h"
#include "strbuf.h"
#include "util.h"

/* Fields every RemoteUnwinder reports, and those the helper announces. */
#define CPY_FIELDS_BASE \
    (CF_FIELD_FUNCTION | CF_FIELD_FILE | CF_FIELD_LINE | CF_FIELD_NATIVE_ID | CF_FIELD_ALL_THREADS)
#define CPY_FIELDS_LOCATION (CF_FIELD_END_LINE | CF_FIELD_COLUMN | CF_FIELD_END_COLUMN)
#define CPY_FIELDS_ALL (CPY_FIELDS_BASE | CPY_FIELDS_LOCATION | CF_FIELD_MAIN | CF_FIELD_EXCEPTION)

/* A frame is [funcname, filename, lineno] or, with locations,
 * [funcname, filename, lineno, end_lineno, col_offset, end_col_offset]. */
#define FRAME_ITEMS_SHORT 3u
#define FRAME_ITEMS_LONG 6u
/* RemoteUnwinder's "unknown" position (-1) is the sample's. */
_Static_assert(CF_POS_NONE == -1, "RemoteUnwinder reports unknown positions as -1");

/* argv: PID CACHE(0|1).  First line: {"ready": {capabilities}} or
 * {"fatal": text}.  Then per request line: {"threads": [...]} or
 * {"error": text}.  JSON with ASCII escapes: lone surrogates of target
 * strings survive as \udXXX. */
static const char HELPER[] =
    "import sys, json\n"
    "def out(o):\n"
    "    sys.stdout.write(json.dumps(o) + '\\n'); sys.stdout.flush()\n"
    "def why(e):\n"
    "    return '%s: %s' % (type(e).__name__, e)\n"
    "try:\n"
    "    import _remote_debugging as rd\n"
    "    kw = {'cache_frames': True} if sys.argv[2] == '1' else {}\n"
    "    u = rd.RemoteUnwinder(int(sys.argv[1]), all_threads=True, **kw)\n"
    "except Exception as e:\n"
    "    out({'fatal': why(e)}); sys.exit(0)\n"
    "MAIN = getattr(rd, 'THREAD_STATUS_MAIN_THREAD', None)\n"
    "EXC = getattr(rd, 'THREAD_STATUS_HAS_EXCEPTION', None)\n"
    "GIL = getattr(rd, 'THREAD_STATUS_HAS_GIL', None)\n"
    "def flag(t, bit):\n"
    "    s = getattr(t, 'status', None)\n"
    "    return None if s is None or bit is None else bool(s & bit)\n"
    "LOC = hasattr(rd.FrameInfo, 'location')\n"
    "def frame(f):\n"
    "    if not LOC:\n"
    "        return [f.funcname, f.filename, f.lineno]\n"
    "    return [f.funcname, f.filename] + (list(f.location) if f.location is not None else [None] * 4)\n"
    "out({'ready': {'location': LOC,\n"
    "               'main': MAIN is not None, 'exception': EXC is not None}})\n"
    "while sys.stdin.readline():\n"
    "    try:\n"
    "        ts = []\n"
    "        for item in u.get_stack_trace():\n"
    "            for t in getattr(item, 'threads', [item]):\n"
    "                ts.append({'id': t.thread_id, 'interp': getattr(item, 'interpreter_id', 0),\n"
    "                           'main': flag(t, MAIN), 'exception': flag(t, EXC), 'gil': flag(t, GIL),\n"
    "                           'frames': [frame(f) for f in t.frame_info]})\n"
    "    except Exception as e:\n"
    "        out({'error': why(e)}); continue\n"
    "    out({'threads': ts})\n";

typedef struct cpy_config {
    bool cache_frames;
    bool colocate;         /* the helper moved, before each sample, to the CPU the target's running thread last ran on */
} cpy_config;

static const cpy_config CACHE_OFF = {false, false};
static const cpy_config CACHE_ON = {true, false};
static const cpy_config CACHE_ON_COLOCATE = {true, true};

typedef struct cpy_state {
    cf_child child;
    int to_helper;         /* the helper's stdin; -1 once closed */
    int from_helper;       /* its stdout and stderr */
    cf_linebuf lb;
    double timeout;
    unsigned fields;       /* what this interpreter's RemoteUnwinder reports */
    bool colocating;
    fps_colocation col;    /* moves the helper (colocate.h) */
    uint64_t follow;       /* the last sample's GIL holder, else its main thread; 0: none */
    char dead[CF_ERRMSG_LEN]; /* why the helper stopped; "" while it answers */
} cpy_state;

static const char *cpy_applies(const cf_adapter_def *d, const cf_interp *in, char *buf, size_t len)
{
    const cpy_config *c = d->data;
    int major = in->major, minor = in->minor;
    if (major < CF_CPYTHON_MIN_MAJOR || (major == CF_CPYTHON_MIN_MAJOR && minor < CF_CPYTHON_MIN_MINOR)) {
        snprintf(buf, len, "RemoteUnwinder first shipped in CPython %d.%d", CF_CPYTHON_MIN_MAJOR,
                 CF_CPYTHON_MIN_MINOR);
        return buf;
    }
    if (c->cache_frames && major == CF_CPYTHON_MIN_MAJOR && minor < CF_CPYTHON_CACHE_MIN_MINOR) {
        snprintf(buf, len, "cache_frames needs CPython %d.%d", CF_CPYTHON_MIN_MAJOR, CF_CPYTHON_CACHE_MIN_MINOR);
        return buf;
    }
    return NULL;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Stops the helper and records why; later samples quote the reason. */
static void kill_helper(cpy_state *st, const char *reason)
{
    close_fd(&st->to_helper);
    cf_child_kill(&st->child);
    close_fd(&st->from_helper);
    if (!st->dead[0])
        snprintf(st->dead, sizeof st->dead, "%s", reason);
}

static void cpy_detach(void *state)
{
    cpy_state *st = state;
    if (!st)
        return;
    if (st->colocating)
        fps_colocate_stop(&st->col);
    /* Closing stdin ends the helper's loop; it is killed either way. */
    close_fd(&st->to_helper);
    cf_child_wait_exit(&st->child, cf_now() + CF_CPYTHON_EXIT_WAIT_S);
    kill_helper(st, "detached");
    cf_linebuf_free(&st->lb);
    free(st);
}

/* Reads the helper's next line as a JSON object.  A missing, late, overlong
 * or non-JSON answer kills the helper (its protocol is lost) and leaves
 * the reason in err. */
static int read_answer(cpy_state *st, const char *what, json_object **obj, char *err, size_t errlen)
{
    char *line;
    size_t len;
    char reason[CF_ERRMSG_LEN];
    cf_strbuf text;
    cf_sb_init(&text);
    *obj = NULL;
    int r = cf_linebuf_read(&st->lb, st->from_helper, cf_now() + st->timeout, &line, &len);
    if (r == CF_E_INTERRUPTED || r == CF_E_NOMEM) {
        cf_sb_free(&text);
        return r;
    }
    int rc = CF_E_UNWINDER;
    if (r == CF_E_TIMEOUT) {
        snprintf(reason, sizeof reason, "the RemoteUnwinder helper gave no %s within %.1f s (killed)", what,
                 st->timeout);
        rc = CF_E_TIMEOUT;
    } else if (r == CF_E_EOF) {
        /* Whatever it printed last (a traceback) says why it ended. */
        size_t skip = len > CF_REASON_LEN ? len - CF_REASON_LEN : 0;
        cf_sb_append_sanitized(&text, line + skip, len - skip);
        close_fd(&st->to_helper);
        cf_child_wait_exit(&st->child, cf_now() + CF_CPYTHON_EXIT_WAIT_S);
        cf_child_kill(&st->child);
        char status[128];
        cf_describe_status(st->child.status, status, sizeof status);
        snprintf(reason, sizeof reason, "the RemoteUnwinder helper ended (%s) instead of sending its %s%s%s", status,
                 what, text.len ? ": " : "", cf_sb_str(&text));
    } else if (r == CF_E_LIMIT) {
        snprintf(reason, sizeof reason, "the RemoteUnwinder helper's %s is longer than %u bytes", what,
                 CF_MAX_LINE_BYTES);
    } else if (r != CF_OK) {
        snprintf(reason, sizeof reason, "reading the RemoteUnwinder helper's %s: %s", what, cf_strerror(r));
    } else {
        char why[CF_ERRMSG_LEN];
        int p = cf_channel_parse(line, len, obj, why, sizeof why);
        cf_sb_free(&text);
        if (p == CF_OK)
            return CF_OK;
        if (p != CF_E_FORMAT)
            return p;
        snprintf(reason, sizeof reason, "the RemoteUnwinder helper sent a malformed %s: %.*s", what,
                 (int)CF_REASON_LEN, why);
    }
    cf_sb_free(&text);
    kill_helper(st, reason);
    snprintf(err, errlen, "%s", reason);
    return rc;
}

/* err = prefix + the (sanitized, clipped) text the helper sent. */
static int quote(const char *prefix, const char *text, char *err, size_t errlen)
{
    cf_strbuf sb;
    cf_sb_init(&sb);
    cf_sb_append_sanitized(&sb, text, strnlen(text, CF_REASON_LEN));
    snprintf(err, errlen, "%s%s", prefix, cf_sb_str(&sb));
    int rc = sb.failed ? CF_E_NOMEM : CF_E_UNWINDER;
    cf_sb_free(&sb);
    return rc;
}

static int start_helper(cpy_state *st, const cf_target *t, bool cache, char *err, size_t errlen)
{
    char pidstr[24];
    int out[2] = {-1, -1};
    char **argv = NULL;
    snprintf(pidstr, sizeof pidstr, "%d", t->pid);
    const char *extra[] = {"-I", "-c", HELPER, pidstr, cache ? "1" : "0"};
    int rc = cf_argv_build(t->interp->root, t->interp->argv, t->interp->argc, extra,
                           sizeof extra / sizeof extra[0], &argv);
    if (rc)
        return rc;
    if (pipe2(out, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot start the RemoteUnwinder helper: pipe: %s", strerror(errno));
        rc = CF_E_UNWINDER;
        goto out;
    }
    cf_spawn_req req = {.argv = argv, .stdout_fd = out[1], .stderr_fd = out[1], .stdin_writer = &st->to_helper};
    char why[CF_ERRMSG_LEN];
    if (cf_spawn(&req, &st->child, why, sizeof why) != CF_OK) {
        snprintf(err, errlen, "cannot start the RemoteUnwinder helper: %s", why);
        rc = CF_E_UNWINDER;
        goto out;
    }
    st->from_helper = out[0];
    out[0] = -1;
out:
    close_fd(&out[0]);
    close_fd(&out[1]);
    cf_argv_free(argv);
    return rc;
}

/* The "ready" line: the capabilities of this RemoteUnwinder. */
static int await_ready(cpy_state *st, char *err, size_t errlen)
{
    json_object *msg = NULL;
    int rc = read_answer(st, "ready line", &msg, err, errlen);
    if (rc)
        return rc;
    json_object *ready = NULL;
    const char *fatal = cf_json_str(msg, "fatal", NULL);
    if (fatal) {
        rc = quote("RemoteUnwinder could not attach: ", fatal, err, errlen);
    } else if (!json_object_object_get_ex(msg, "ready", &ready) || !json_object_is_type(ready, json_type_object)) {
        snprintf(err, errlen, "the RemoteUnwinder helper's first line is not a \"ready\" object");
        rc = CF_E_UNWINDER;
    } else {
        st->fields = CPY_FIELDS_BASE;
        if (cf_json_bool(ready, "location", false))
            st->fields |= CPY_FIELDS_LOCATION;
        if (cf_json_bool(ready, "main", false))
            st->fields |= CF_FIELD_MAIN;
        if (cf_json_bool(ready, "exception", false))
            st->fields |= CF_FIELD_EXCEPTION;
    }
    if (rc)
        kill_helper(st, err);
    json_object_put(msg);
    return rc;
}

static int cpy_attach(const cf_adapter_def *d, const cf_target *t, void **state, char *err, size_t errlen)
{
    const cpy_config *c = d->data;
    *state = NULL;
    cpy_state *st = calloc(1, sizeof *st);
    if (!st)
        return CF_E_NOMEM;
    st->to_helper = st->from_helper = -1;
    st->child.from_child = st->child.to_child = -1;
    st->timeout = t->timeout;
    cf_linebuf_init(&st->lb);
    int rc = start_helper(st, t, c->cache_frames, err, errlen);
    if (rc == CF_OK)
        rc = await_ready(st, err, errlen);
    if (rc == CF_OK && c->colocate) {
        if (fps_colocate_start_mover(&st->col, t->pid, st->child.pid, err, errlen) != FP_OK)
            rc = CF_E_UNWINDER;
        else
            st->colocating = true;
    }
    if (rc) {
        cpy_detach(st);
        return rc;
    }
    *state = st;
    return CF_OK;
}

static int get_string(cf_sample *s, json_object *v, const char **out)
{
    if (!json_object_is_type(v, json_type_string))
        return CF_E_FORMAT;
    *out = cf_sample_intern(s, json_object_get_string(v), (size_t)json_object_get_string_len(v));
    return *out ? CF_OK : CF_E_NOMEM;
}

static int add_frame(cf_sample *s, json_object *a, bool location)
{
    size_t want = location ? FRAME_ITEMS_LONG : FRAME_ITEMS_SHORT;
    if (!json_object_is_type(a, json_type_array) || json_object_array_length(a) != want)
        return CF_E_FORMAT;
    cf_frame f = {.name = "", .kind = CF_KIND_PYTHON, .end_line = CF_POS_NONE, .column = CF_POS_NONE,
                  .end_column = CF_POS_NONE};
    int rc = get_string(s, json_object_array_get_idx(a, 0), &f.function);
    if (!rc)
        rc = get_string(s, json_object_array_get_idx(a, 1), &f.file);
    if (!rc)
        rc = cf_json_int32(json_object_array_get_idx(a, 2), CF_POS_NONE, &f.line);
    if (!rc && location) {
        rc = cf_json_int32(json_object_array_get_idx(a, 3), CF_POS_NONE, &f.end_line);
        if (!rc)
            rc = cf_json_int32(json_object_array_get_idx(a, 4), CF_POS_NONE, &f.column);
        if (!rc)
            rc = cf_json_int32(json_object_array_get_idx(a, 5), CF_POS_NONE, &f.end_column);
    }
    return rc ? rc : cf_sample_add_frame(s, &f);
}

static int get_flag(json_object *t, const char *key, bool wanted, int *out)
{
    json_object *v = NULL;
    *out = CF_UNKNOWN;
    if (!json_object_object_get_ex(t, key, &v) || !v)
        return wanted ? CF_E_FORMAT : CF_OK;
    if (!json_object_is_type(v, json_type_boolean))
        return CF_E_FORMAT;
    *out = json_object_get_boolean(v) ? CF_YES : CF_NO;
    return CF_OK;
}

/* Adds thread t to s; *holder is set to its native id when it holds the
 * GIL, and *main_id when it is the main thread. */
static int add_thread(cf_sample *s, json_object *t, unsigned fields, uint64_t *holder, uint64_t *main_id)
{
    json_object *id = NULL, *interp = NULL, *frames = NULL;
    if (!json_object_is_type(t, json_type_object) || !json_object_object_get_ex(t, "id", &id) ||
        !json_object_is_type(id, json_type_int) || json_object_get_int64(id) < 0 ||
        !json_object_object_get_ex(t, "interp", &interp) || !json_object_is_type(interp, json_type_int) ||
        !json_object_object_get_ex(t, "frames", &frames) || !json_object_is_type(frames, json_type_array))
        return CF_E_FORMAT;
    int main_flag, exc_flag, gil_flag;
    if (get_flag(t, "main", fields & CF_FIELD_MAIN, &main_flag) ||
        get_flag(t, "exception", fields & CF_FIELD_EXCEPTION, &exc_flag) || get_flag(t, "gil", false, &gil_flag))
        return CF_E_FORMAT;
    if (gil_flag == CF_YES)
        *holder = json_object_get_uint64(id);
    if (main_flag == CF_YES)
        *main_id = json_object_get_uint64(id);
    cf_thread proto = {.native_id = json_object_get_uint64(id), .interp_id = json_object_get_int64(interp),
                       .main = main_flag == CF_YES, .exception = exc_flag};
    cf_thread *added;
    int rc = cf_sample_add_thread(s, &proto, &added);
    for (size_t i = 0; i < json_object_array_length(frames) && rc == CF_OK; i++)
        rc = add_frame(s, json_object_array_get_idx(frames, i), fields & CPY_FIELDS_LOCATION);
    return rc;
}

/* Writes one request line. */
static int request(cpy_state *st)
{
    for (;;) {
        ssize_t w = write(st->to_helper, "\n", 1);
        if (w == 1)
            return CF_OK;
        if (w < 0 && errno == EINTR)
            continue;
        return CF_E_IO;
    }
}

static int cpy_sample(void *state, cf_sample *out, char *err, size_t errlen)
{
    cpy_state *st = state;
    if (st->dead[0]) {
        snprintf(err, errlen, "the RemoteUnwinder helper is no longer running: %s", st->dead);
        return CF_E_UNWINDER;
    }
    if (st->colocating)
        fps_colocate_follow_tid(&st->col, st->follow);
    if (request(st) != CF_OK) {
        char reason[CF_ERRMSG_LEN];
        snprintf(reason, sizeof reason, "cannot send a request to the RemoteUnwinder helper: %s", strerror(errno));
        kill_helper(st, reason);
        snprintf(err, errlen, "%s", reason);
        return CF_E_UNWINDER;
    }
    json_object *msg = NULL, *threads = NULL;
    int rc = read_answer(st, "answer", &msg, err, errlen);
    if (rc)
        return rc;
    const char *error = cf_json_str(msg, "error", NULL);
    if (error) {
        /* get_stack_trace raised: this sample failed, the session lives. */
        rc = quote("RemoteUnwinder.get_stack_trace() raised ", error, err, errlen);
        goto out;
    }
    out->fields &= st->fields;
    if (!json_object_object_get_ex(msg, "threads", &threads) || !json_object_is_type(threads, json_type_array)) {
        rc = CF_E_FORMAT;
    } else {
        uint64_t holder = 0, main_id = 0;
        for (size_t i = 0; i < json_object_array_length(threads) && rc == CF_OK; i++)
            rc = add_thread(out, json_object_array_get_idx(threads, i), st->fields, &holder, &main_id);
        if (rc == CF_OK)
            st->follow = holder ? holder : main_id;
    }
    if (rc == CF_E_FORMAT) {
        snprintf(err, errlen, "the RemoteUnwinder helper's answer does not have the expected shape");
        rc = CF_E_UNWINDER;
    }
out:
    json_object_put(msg);
    return rc;
}

size_t cf_cpython_defs(cf_adapter_def *out, size_t cap)
{
    const cf_adapter_def defs[] = {
        {.unwinder = "cpython", .config = "cache-off", .fields = CPY_FIELDS_ALL,
         .samples_per_checkpoint = CF_SAMPLES_PER_CHECKPOINT, .applies = cpy_applies, .attach = cpy_attach,
         .sample = cpy_sample, .detach = cpy_detach, .data = &CACHE_OFF},
        {.unwinder = "cpython", .config = "cache-on", .fields = CPY_FIELDS_ALL,
         .samples_per_checkpoint = CF_SAMPLES_PER_CHECKPOINT, .applies = cpy_applies, .attach = cpy_attach,
         .sample = cpy_sample, .detach = cpy_detach, .data = &CACHE_ON},
        {.unwinder = "cpython", .config = "cache-on+colocate", .fields = CPY_FIELDS_ALL,
         .samples_per_checkpoint = CF_SAMPLES_PER_CHECKPOINT, .applies = cpy_applies, .attach = cpy_attach,
         .sample = cpy_sample, .detach = cpy_detach, .data = &CACHE_ON_COLOCATE, .named_only = true},
    };
    size_t n = sizeof defs / sizeof defs[0];
    for (size_t i = 0; i < n && i < cap; i++)
        out[i] = defs[i];
    return n < cap ? n : cap;
}
