/* austin.c — the adapter of austin 3.7 as an unwinder under test.  Each
 * sample is one austin run, `austin -b -x 1 -i 1s -p PID` (see
 * austin_command for where it runs): it samples every thread of every
 * interpreter once (a second pass may start before its one-second exposure
 * ends and is dropped), and its MOJO output (mojo.h) becomes a cf_sample.  austin
 * reports qualified names, files, lines and end lines, 1-based columns
 * (converted here to 0-based) and native thread ids (Python >= 3.11). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adapter.h"
#include "conform.h"
#include "manifest.h"
#include "mojo.h"
#include "registry.h"
#include "spawn.h"
#include "strbuf.h"
#include "util.h"

/* austin 3.7.0's README: "Austin supports Python 3.8 through 3.13". */
#define AUSTIN_CLAIM_MAJOR 3
#define AUSTIN_CLAIM_MIN_MINOR 8
#define AUSTIN_CLAIM_MAX_MINOR 13
#define AUSTIN_VERSION_PREFIX "austin 3.7."
#define AUSTIN_FIELDS                                                                                       \
    (CF_FIELD_FUNCTION | CF_FIELD_FILE | CF_FIELD_LINE | CF_FIELD_END_LINE | CF_FIELD_COLUMN |             \
     CF_FIELD_END_COLUMN | CF_FIELD_NATIVE_ID | CF_FIELD_ALL_THREADS)
#define AUSTIN_VERSION_OUTPUT_MAX 4096u
#define ESC 0x1b

#define AUSTIN_PREFIX_MAX 4u

typedef struct austin_state {
    int pid;
    double timeout;
    /* The command that runs austin: "chroot ROOT EXE" or "LOADER
     * --library-path LIBDIR EXE" (see austin_command). */
    char *prefix[AUSTIN_PREFIX_MAX];
    size_t nprefix;
    mojo_stream stream;
} austin_state;

static int add_prefix(austin_state *st, const char *s)
{
    char *c = strdup(s);
    if (!c)
        return CF_E_NOMEM;
    st->prefix[st->nprefix++] = c;
    return CF_OK;
}

/* How austin runs.  austin opens the files of the target's memory maps by
 * the paths it reads there, so it must run where the target's files are:
 * inside the target's root when it is chrooted; for a target on the host,
 * on the host but with the glibc of the root it is installed in
 * (FRAMEPROOF_HOME/sid: austin 3.7 needs a newer glibc than Debian 12's),
 * through that root's dynamic loader.  CF_OK when austin exists there. */
static int austin_command(austin_state *st, const cf_interp *in, const char *exe, char *err, size_t errlen)
{
    char root[PATH_MAX], host_exe[PATH_MAX], loader[PATH_MAX], libdir[PATH_MAX];
    bool chrooted = cf_interp_chrooted(in);
    const char *home = getenv("FRAMEPROOF_HOME");
    int rc = chrooted ? (strlen(in->root) < sizeof root ? CF_OK : CF_E_LIMIT)
                      : cf_path_join(root, sizeof root, home && *home ? home : CF_DEFAULT_HOME, CF_AUSTIN_HOST_ROOT);
    if (rc == CF_OK && chrooted)
        strcpy(root, in->root);
    if (rc == CF_OK)
        rc = cf_path_join(host_exe, sizeof host_exe, root, exe);
    if (rc == CF_OK)
        rc = cf_path_join(loader, sizeof loader, root, CF_AUSTIN_LOADER);
    if (rc == CF_OK)
        rc = cf_path_join(libdir, sizeof libdir, root, CF_AUSTIN_LIBDIR);
    if (rc != CF_OK) {
        snprintf(err, errlen, "the path of austin inside %.*s is too long", (int)CF_NAME_SHOWN, root);
        return CF_E_UNWINDER;
    }
    if (access(host_exe, X_OK) != 0) {
        snprintf(err, errlen, "no austin at %.*s inside the root %.*s (targets/provision installs it)",
                 (int)CF_NAME_SHOWN, exe, (int)CF_NAME_SHOWN, root);
        return CF_E_UNWINDER;
    }
    if (chrooted) {
        if ((rc = add_prefix(st, "chroot")) == CF_OK && (rc = add_prefix(st, root)) == CF_OK)
            rc = add_prefix(st, exe);
        return rc;
    }
    if (access(loader, X_OK) != 0) {
        snprintf(err, errlen, "no dynamic loader at %.*s to run austin with on the host", (int)CF_NAME_SHOWN,
                 loader);
        return CF_E_UNWINDER;
    }
    if ((rc = add_prefix(st, loader)) == CF_OK && (rc = add_prefix(st, "--library-path")) == CF_OK &&
        (rc = add_prefix(st, libdir)) == CF_OK)
        rc = add_prefix(st, host_exe);
    return rc;
}

static const char *austin_applies(const cf_adapter_def *d, const cf_interp *in, char *buf, size_t len)
{
    (void)d;
    if (in->major == AUSTIN_CLAIM_MAJOR && in->minor >= AUSTIN_CLAIM_MIN_MINOR &&
        in->minor <= AUSTIN_CLAIM_MAX_MINOR)
        return NULL;
    snprintf(buf, len, "austin 3.7 does not support %d.%d (it claims %d.%d through %d.%d)", in->major, in->minor,
             AUSTIN_CLAIM_MAJOR, AUSTIN_CLAIM_MIN_MINOR, AUSTIN_CLAIM_MAJOR, AUSTIN_CLAIM_MAX_MINOR);
    return buf;
}

/* --- one austin run -------------------------------------------------------------- */

typedef struct run_result {
    int status;              /* wait status */
    unsigned char *out;      /* stdout (malloc'd), outlen bytes */
    size_t outlen;
    bool out_too_long;
    cf_strbuf tail;          /* the end of stderr, escape sequences removed, sanitized */
} run_result;

static void run_result_free(run_result *r)
{
    free(r->out);
    cf_sb_free(&r->tail);
    memset(r, 0, sizeof *r);
}

/* Reads all of fd (from offset 0) up to max bytes. */
static int read_all(int fd, size_t max, unsigned char **out, size_t *len, bool *too_long)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return CF_E_IO;
    size_t size = st.st_size > 0 ? (size_t)st.st_size : 0;
    *too_long = size > max;
    if (*too_long)
        size = max;
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf)
        return CF_E_NOMEM;
    size_t got = 0;
    while (got < size) {
        ssize_t n = pread(fd, buf + got, size - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    *out = buf;
    *len = got;
    return CF_OK;
}

/* The last CF_REASON_LEN bytes of stderr without ANSI escape sequences
 * (austin colours its messages), one line. */
static int stderr_tail(int fd, cf_strbuf *out)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    bool too_long;
    int rc = read_all(fd, CF_TAIL_BYTES * 8u, &buf, &len, &too_long);
    if (rc != CF_OK)
        return rc;
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == ESC && i + 1 < len && buf[i + 1] == '[') {
            i += 2;
            while (i < len && !(buf[i] >= 0x40 && buf[i] <= 0x7e))
                i++;
            continue;
        }
        if (buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t') {
            if (k > 0 && buf[k - 1] != ' ')
                buf[k++] = ' ';
            continue;
        }
        buf[k++] = buf[i];
    }
    while (k > 0 && buf[k - 1] == ' ')
        k--;
    size_t start = k > CF_REASON_LEN ? k - CF_REASON_LEN : 0;
    while (start < k && start > 0 && (buf[start] & 0xC0) == 0x80)
        start++;
    if (start > 0)
        rc = cf_sb_puts(out, "...");
    if (rc == CF_OK)
        rc = cf_sb_append_sanitized(out, (const char *)buf + start, k - start);
    free(buf);
    return rc;
}

static int scratch_file(void)
{
    FILE *f = tmpfile();
    if (!f)
        return -1;
    int fd = dup(fileno(f));
    fclose(f);
    return fd;
}

/* Runs austin with args and waits for it (st->timeout). */
static int run_austin(const austin_state *st, const char *const *args, size_t nargs, run_result *r, char *err,
                      size_t errlen)
{
    char **argv = NULL;
    cf_child child = {.pid = 0, .from_child = -1, .to_child = -1};
    int out = -1, errfd = -1, rc;
    memset(r, 0, sizeof *r);
    cf_sb_init(&r->tail);

    rc = cf_argv_build("/", (char *const *)st->prefix, st->nprefix, args, nargs, &argv);
    if (rc != CF_OK)
        goto done;
    out = scratch_file();
    errfd = scratch_file();
    if (out < 0 || errfd < 0) {
        snprintf(err, errlen, "cannot create a temporary file for austin's output: %s", strerror(errno));
        rc = CF_E_UNWINDER;
        goto done;
    }
    cf_spawn_req req = {.argv = argv, .stdout_fd = out, .stderr_fd = errfd, .channel = false};
    char why[CF_ERRMSG_LEN];
    if (cf_spawn(&req, &child, why, sizeof why) != CF_OK) {
        snprintf(err, errlen, "cannot start austin: %.*s", (int)CF_REASON_LEN, why);
        rc = CF_E_UNWINDER;
        goto done;
    }
    rc = cf_child_wait_exit(&child, cf_now() + st->timeout);
    cf_child_kill(&child);   /* reaps it; after a timeout, kills it first */
    r->status = child.status;
    int trc = stderr_tail(errfd, &r->tail);
    if (rc == CF_E_TIMEOUT) {
        snprintf(err, errlen, "austin did not finish within %.1f s (killed); stderr: %s", st->timeout,
                 cf_sb_str(&r->tail));
        goto done;
    }
    if (rc != CF_OK)
        goto done;
    rc = trc;
    if (rc == CF_OK)
        rc = read_all(out, CF_MOJO_MAX_BYTES, &r->out, &r->outlen, &r->out_too_long);
    if (rc == CF_E_IO) {
        snprintf(err, errlen, "cannot read austin's output: %s", strerror(errno));
        rc = CF_E_UNWINDER;
    }
done:
    if (rc == CF_E_NOMEM)
        snprintf(err, errlen, "out of memory running austin");
    if (out >= 0)
        close(out);
    if (errfd >= 0)
        close(errfd);
    cf_argv_free(argv);
    return rc;
}

/* CF_OK when austin exited 0, else CF_E_UNWINDER with what happened. */
static int check_exit(const run_result *r, const char *what, char *err, size_t errlen)
{
    if (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0)
        return CF_OK;
    char status[CF_NAME_SHOWN];
    cf_describe_status(r->status, status, sizeof status);
    snprintf(err, errlen, "%s: austin %s; stderr: %s", what, status,
             r->tail.len ? cf_sb_str(&r->tail) : "(empty)");
    return CF_E_UNWINDER;
}

/* --- attach, sample, detach -------------------------------------------------------- */

static void austin_detach(void *state)
{
    austin_state *st = state;
    if (!st)
        return;
    for (size_t i = 0; i < st->nprefix; i++)
        free(st->prefix[i]);
    mojo_stream_free(&st->stream);
    free(st);
}

static int austin_attach(const cf_adapter_def *d, const cf_target *t, void **state, char *err, size_t errlen)
{
    austin_state *st = calloc(1, sizeof *st);
    run_result r = {0};
    int rc;
    if (!st)
        return CF_E_NOMEM;
    st->pid = t->pid;
    st->timeout = t->timeout;
    mojo_stream_init(&st->stream);
    rc = austin_command(st, t->interp, d->data ? (const char *)d->data : CF_AUSTIN_DEFAULT_EXE, err, errlen);
    if (rc != CF_OK)
        goto fail;
    /* austin -V: it runs there, and it is 3.7. */
    static const char *const version_args[] = {"-V"};
    rc = run_austin(st, version_args, 1, &r, err, errlen);
    if (rc == CF_OK)
        rc = check_exit(&r, "austin -V", err, errlen);
    if (rc != CF_OK)
        goto fail;
    size_t n = r.outlen < AUSTIN_VERSION_OUTPUT_MAX ? r.outlen : AUSTIN_VERSION_OUTPUT_MAX;
    if (n < strlen(AUSTIN_VERSION_PREFIX) || memcmp(r.out, AUSTIN_VERSION_PREFIX, strlen(AUSTIN_VERSION_PREFIX)) != 0) {
        cf_strbuf shown;
        cf_sb_init(&shown);
        cf_sb_append_sanitized(&shown, (const char *)r.out, n < CF_NAME_SHOWN ? n : CF_NAME_SHOWN);
        snprintf(err, errlen, "austin -V printed \"%s\", not %sx", cf_sb_str(&shown), AUSTIN_VERSION_PREFIX);
        cf_sb_free(&shown);
        rc = CF_E_UNWINDER;
        goto fail;
    }
    run_result_free(&r);
    *state = st;
    return CF_OK;
fail:
    run_result_free(&r);
    austin_detach(st);
    return rc;
}

/* austin's 1-based numbers, 0 for none, as the sample's positions. */
static bool position(uint32_t v, int one_based_shift, int32_t *out)
{
    if (v == 0) {
        *out = CF_POS_NONE;
        return true;
    }
    if (v > INT32_MAX)
        return false;
    *out = (int32_t)v - one_based_shift;
    return true;
}

/* Adds one MOJO stack as a thread of the sample. */
static int add_stack(const mojo_stream *s, const mojo_stack *ms, cf_sample *out, char *err, size_t errlen)
{
    cf_thread proto = {.native_id = ms->tid, .interp_id = (int64_t)ms->iid, .exception = CF_UNKNOWN};
    cf_thread *th;
    char msg[CF_ERRMSG_LEN];
    if (ms->iid > INT64_MAX) {
        snprintf(err, errlen, "austin's output: interpreter id %llu out of range", (unsigned long long)ms->iid);
        return CF_E_UNWINDER;
    }
    if (ms->broken) {
        snprintf(msg, sizeof msg, "austin could not read %zu of this thread's frames (FRAME_INVALID)", ms->broken);
        proto.error = cf_sample_intern(out, msg, strlen(msg));
        if (!proto.error)
            return CF_E_NOMEM;
    }
    int rc = cf_sample_add_thread(out, &proto, &th);
    if (rc != CF_OK || ms->broken)
        return rc;
    /* austin writes outermost first; the sample is innermost first. */
    for (size_t k = ms->count; k-- > 0;) {
        const mojo_frame *mf = &s->frames[ms->first + k];
        if (mf->kind != MOJO_FRAME_PYTHON) {
            snprintf(err, errlen, "austin's output: a kernel frame '%.*s' (austin -b reports Python frames only)",
                     (int)CF_NAME_SHOWN, mf->scope);
            return CF_E_UNWINDER;
        }
        cf_frame f = {.kind = CF_KIND_PYTHON, .name = ""};
        f.function = cf_sample_intern(out, mf->scope, strlen(mf->scope));
        f.file = cf_sample_intern(out, mf->file, strlen(mf->file));
        if (!f.function || !f.file)
            return CF_E_NOMEM;
        if (!position(mf->line, 0, &f.line) || !position(mf->line_end, 0, &f.end_line) ||
            !position(mf->column, 1, &f.column) || !position(mf->column_end, 1, &f.end_column)) {
            snprintf(err, errlen, "austin's output: a position of %.*s beyond 2^31", (int)CF_NAME_SHOWN, mf->scope);
            return CF_E_UNWINDER;
        }
        if ((rc = cf_sample_add_frame(out, &f)) != CF_OK)
            return rc;
    }
    return CF_OK;
}

static int austin_sample(void *state, cf_sample *out, char *err, size_t errlen)
{
    austin_state *st = state;
    run_result r = {0};
    char pid[32], why[CF_ERRMSG_LEN];
    snprintf(pid, sizeof pid, "%d", st->pid);
    const char *const args[] = {"-b", "-x", "1", "-i", "1s", "-p", pid};
    int rc = run_austin(st, args, sizeof args / sizeof args[0], &r, err, errlen);
    if (rc == CF_OK)
        rc = check_exit(&r, "sampling", err, errlen);
    if (rc != CF_OK)
        goto done;
    if (r.out_too_long) {
        snprintf(err, errlen, "austin's output is longer than %u bytes", CF_MOJO_MAX_BYTES);
        rc = CF_E_UNWINDER;
        goto done;
    }
    mojo_stream_free(&st->stream);
    rc = mojo_decode(r.out, r.outlen, &st->stream, why, sizeof why);
    if (rc == CF_E_NOMEM)
        goto done;
    if (rc != CF_OK) {
        snprintf(err, errlen, "austin's output is not valid MOJO: %.*s", (int)CF_REASON_LEN, why);
        rc = CF_E_UNWINDER;
        goto done;
    }
    size_t n;
    if ((rc = mojo_first_pass(&st->stream, &n)) != CF_OK)
        goto done;
    if (n == 0) {
        snprintf(err, errlen, "austin exited 0 but reported no thread (%zu bytes of MOJO); stderr: %s", r.outlen,
                 r.tail.len ? cf_sb_str(&r.tail) : "(empty)");
        rc = CF_E_UNWINDER;
        goto done;
    }
    for (size_t i = 0; i < n && rc == CF_OK; i++) {
        if (st->stream.stacks[i].pid != (uint64_t)st->pid) {
            snprintf(err, errlen, "austin's output: a thread of process %llu, not of %d",
                     (unsigned long long)st->stream.stacks[i].pid, st->pid);
            rc = CF_E_UNWINDER;
            break;
        }
        rc = add_stack(&st->stream, &st->stream.stacks[i], out, err, errlen);
    }
done:
    if (rc == CF_E_NOMEM)
        snprintf(err, errlen, "out of memory");
    run_result_free(&r);
    return rc;
}


size_t cf_austin_defs(cf_adapter_def *out, size_t cap, const cf_adapter_opts *o)
{
    if (cap < 1)
        return 0;
    out[0] = (cf_adapter_def){
        .unwinder = "austin",
        .config = "",
        .fields = AUSTIN_FIELDS,
        .samples_per_checkpoint = CF_AUSTIN_SAMPLES_PER_CHECKPOINT,
        .applies = austin_applies,
        .attach = austin_attach,
        .sample = austin_sample,
        .detach = austin_detach,
        .data = o ? o->austin : NULL,
    };
    return 1;
}
