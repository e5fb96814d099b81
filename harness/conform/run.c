/* run.c — a whole conformance run (see run.h): input selection, the
 * scheduler that runs each case in a forked worker process, SIGINT/SIGTERM
 * handling, and the merge of the workers' results into report.json,
 * junit.xml and matrix.md. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "adapter.h"
#include "case.h"
#include "conform.h"
#include "install_paths.h"
#include "interrupt.h"
#include "live_case.h"
#include "live_report.h"
#include "manifest.h"
#include "probe.h"
#include "run.h"
#include "run_state.h"
#include "scenarios.h"
#include "spawn.h"
#include "strbuf.h"
#include "target_sync.h"
#include "util.h"
#include "frameproof/frameproof.h"

#define INDEX_RELPATH "scenarios/index.json"
#define LIVE_INDEX_RELPATH "live/index.json"
#define REAP_POLL_NS 20000000L   /* scheduler wake-up interval */

const char *cf_fault_name(int fault)
{
    return fault == CF_FAULT_DROP_FRAME        ? "drop-frame"
           : fault == CF_FAULT_SHIFT_LINE      ? "shift-line"
           : fault == CF_FAULT_SPLICE_PREVIOUS ? "splice-previous"
           : fault == CF_FAULT_CACHE_BY_ADDRESS ? "frame-cache-by-address"
                                               : NULL;
}

static bool listed(const char *const *list, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0)
            return true;
    return false;
}

/* The manifest path: --manifest, else $FRAMEPROOF_HOME's. */
static int manifest_path(conform_run *r)
{
    if (r->o.manifest) {
        snprintf(r->manifest_path, sizeof r->manifest_path, "%s", r->o.manifest);
        return CF_OK;
    }
    return cf_manifest_default_path(r->manifest_path, sizeof r->manifest_path);
}

/* The distinct unwinder names, in the order given. */
static int select_unwinders(conform_run *r)
{
    r->unwinder_names = calloc(r->o.nunwinders, sizeof *r->unwinder_names);
    if (!r->unwinder_names) {
        fprintf(stderr, "frameproof conform: out of memory\n");
        return CF_EXIT_FAIL;
    }
    for (size_t i = 0; i < r->o.nunwinders; i++)
        if (!listed(r->unwinder_names, r->nunwinder_names, r->o.unwinders[i]))
            r->unwinder_names[r->nunwinder_names++] = r->o.unwinders[i];
    return -1;
}

/* Loads manifest and index and selects interpreters, scenarios and
 * unwinders.  The manifest is read unless only --python-path binaries are
 * asked for.  Returns -1 on success, else the exit status. */
static int load_inputs(conform_run *r)
{
    char err[CF_ERRMSG_LEN];
    const cf_run_opts *o = &r->o;
    int st = select_unwinders(r);
    if (st >= 0)
        return st;
    bool need_manifest = o->npythons > 0 || o->npython_paths == 0;
    if (need_manifest) {
        if (manifest_path(r) != CF_OK) {
            fprintf(stderr, "frameproof conform: FRAMEPROOF_HOME too long\n");
            return CF_EXIT_FAIL;
        }
        if (cf_manifest_load(r->manifest_path, &r->manifest, err, sizeof err)) {
            fprintf(stderr, "frameproof conform: %s\n", err);
            return CF_EXIT_FAIL;
        }
    }
    size_t from_manifest = r->manifest.count;
    for (size_t i = 0; i < o->npython_paths; i++) {
        int rc = cf_probe_interpreter(o->python_paths[i], CF_ADAPTER_TIMEOUT_S * o->timeout_scale, &r->manifest,
                                      err, sizeof err);
        if (rc) {
            fprintf(stderr, "frameproof conform: %s\n", rc == CF_E_NOMEM ? "out of memory" : err);
            return CF_EXIT_FAIL;
        }
    }
    const char *targets = o->targets;
    if (!targets)
        targets = getenv("FRAMEPROOF_TARGETS");
    if (!targets || !*targets) {
        if (cf_default_targets_dir(r->targets, sizeof r->targets, err, sizeof err)) {
            fprintf(stderr, "frameproof conform: %s\n", err);
            return CF_EXIT_FAIL;
        }
    } else if (!realpath(targets, r->targets)) {
        fprintf(stderr, "frameproof conform: targets directory %s: %s\n", targets, strerror(errno));
        return CF_EXIT_FAIL;
    }
    char index_path[PATH_MAX];
    if (cf_path_join(index_path, sizeof index_path, r->targets, o->live ? LIVE_INDEX_RELPATH : INDEX_RELPATH) ||
        cf_index_load(index_path, &r->index, err, sizeof err)) {
        fprintf(stderr, "frameproof conform: %s\n", err);
        return CF_EXIT_FAIL;
    }
    for (size_t i = 0; i < o->npythons; i++) {
        long k = cf_manifest_find(&r->manifest, o->pythons[i]);
        if (k < 0 || (size_t)k >= from_manifest) {
            fprintf(stderr, "frameproof conform: no interpreter \"%s\" in %s; known:", o->pythons[i],
                    r->manifest_path);
            for (size_t j = 0; j < from_manifest; j++)
                fprintf(stderr, " %s", r->manifest.items[j].id);
            fputc('\n', stderr);
            return CF_EXIT_USAGE;
        }
    }
    for (size_t i = 0; i < o->nscenarios; i++) {
        if (cf_index_find(&r->index, o->scenarios[i]) < 0) {
            fprintf(stderr, "frameproof conform: no scenario \"%s\" in %s\n", o->scenarios[i], index_path);
            return CF_EXIT_USAGE;
        }
    }
    r->interps = calloc(r->manifest.count + 1, sizeof *r->interps);
    r->scens = calloc(r->index.count + 1, sizeof *r->scens);
    if (!r->interps || !r->scens) {
        fprintf(stderr, "frameproof conform: out of memory\n");
        return CF_EXIT_FAIL;
    }
    for (size_t i = 0; i < r->manifest.count; i++) {
        bool probed = i >= from_manifest;
        if (probed || (!o->npythons && !o->npython_paths) ||
            listed(o->pythons, o->npythons, r->manifest.items[i].id))
            r->interps[r->ninterps++] = i;
    }
    for (size_t i = 0; i < r->index.count; i++) {
        const cf_scenario *s = &r->index.items[i];
        if ((o->nscenarios && !listed(o->scenarios, o->nscenarios, s->name)) || (o->fast && !s->fast))
            continue;
        r->scens[r->nscens++] = i;
    }
    if (r->ninterps == 0 || r->nscens == 0) {
        fprintf(stderr, "frameproof conform: nothing to run (%zu interpreters, %zu scenarios selected)\n",
                r->ninterps, r->nscens);
        return CF_EXIT_USAGE;
    }
    return -1;
}

/* Creates the report, logs and work directories. */
static int prepare_dirs(conform_run *r)
{
    if (cf_mkdir_p(r->o.report_dir) != CF_OK || !realpath(r->o.report_dir, r->report)) {
        fprintf(stderr, "frameproof conform: report directory %s: %s\n", r->o.report_dir, strerror(errno));
        return CF_E_IO;
    }
    char name[64];
    snprintf(name, sizeof name, ".work-%ld", (long)getpid());
    if (cf_path_join(r->work, sizeof r->work, r->report, name) || cf_mkdir_p(r->work) != CF_OK) {
        fprintf(stderr, "frameproof conform: cannot create %s: %s\n", r->work, strerror(errno));
        r->work[0] = '\0';
        return CF_E_IO;
    }
    for (size_t i = 0; i < r->ninterps; i++) {
        char safe[NAME_MAX], rel[PATH_MAX], dir[PATH_MAX];
        cf_sanitize_name(r->manifest.items[r->interps[i]].id, safe, sizeof safe);
        if (cf_path_join(rel, sizeof rel, "logs", safe) || cf_path_join(dir, sizeof dir, r->report, rel) ||
            cf_mkdir_p(dir) != CF_OK) {
            fprintf(stderr, "frameproof conform: cannot create %s/%s: %s\n", r->report, rel, strerror(errno));
            return CF_E_IO;
        }
    }
    return CF_OK;
}

/* True when a selected configuration applies to the interpreter; else
 * why none does, one reason per configuration (why is scratch space
 * either way). */
static bool any_applies(const conform_run *r, const cf_interp *in, char *why, size_t len)
{
    size_t used = 0;
    why[0] = '\0';
    for (size_t i = 0; i < r->o.adapters->count; i++) {
        const cf_adapter_def *d = &r->o.adapters->defs[i];
        char buf[CF_REASON_LEN] = "", label[CF_NAME_SHOWN];
        const char *reason = d->applies ? d->applies(d, in, buf, sizeof buf) : NULL;
        if (!reason)
            return true;
        cf_adapter_label(d, label, sizeof label);
        if (used < len) {
            int n = snprintf(why + used, len - used, "%s%s: %s", used ? "; " : "", label, reason);
            used += n > 0 ? (size_t)n : 0;
        }
    }
    return false;
}

static int build_cases(conform_run *r)
{
    r->ncases = r->ninterps * r->nscens;
    r->cases = calloc(r->ncases, sizeof *r->cases);
    if (!r->cases)
        return CF_E_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < r->ninterps; i++) {
        for (size_t s = 0; s < r->nscens; s++, k++) {
            case_slot *c = &r->cases[k];
            c->interp = r->interps[i];
            c->scen = r->scens[s];
            const char *why = cf_scenario_skip_reason(&r->index.items[c->scen], &r->manifest.items[c->interp],
                                                      c->skip, sizeof c->skip);
            if (!why)
                c->skip[0] = '\0';
            char none[SKIP_REASON_LEN];
            if (!why && !any_applies(r, &r->manifest.items[c->interp], none, sizeof none)) {
                c->no_unwinder = true;
                snprintf(c->skip, sizeof c->skip, "%s", none);
            }
        }
    }
    return CF_OK;
}

/* The result of a case that is not run: the scenario does not apply to
 * the interpreter, or no selected unwinder does (then every unwinder's
 * verdict is "n/a"). */
static json_object *skip_stub(const conform_run *r, const case_slot *c)
{
    json_object *o = cf_case_stub(&r->manifest.items[c->interp], &r->index.items[c->scen], "skip", c->skip);
    if (!o || !c->no_unwinder)
        return o;
    json_object *v = json_object_new_object();
    for (size_t i = 0; v && i < r->nunwinder_names; i++)
        if (cf_json_add(v, r->unwinder_names[i], json_object_new_string("n/a")))
            goto fail;
    if (cf_json_add(o, "verdicts", v) == CF_OK)
        return o;
    v = NULL;
fail:
    json_object_put(v);
    json_object_put(o);
    return NULL;
}

/* Copies the in-target files into every chroot that has cases to run; on
 * failure that interpreter's cases become harness errors. */
static int sync_roots(conform_run *r)
{
    for (size_t i = 0; i < r->ninterps; i++) {
        const cf_interp *in = &r->manifest.items[r->interps[i]];
        if (!cf_interp_chrooted(in))
            continue;
        bool needed = false, done_before = false;
        for (size_t k = 0; k < r->ncases; k++)
            needed |= r->cases[k].interp == r->interps[i] && !r->cases[k].skip[0];
        for (size_t j = 0; j < i; j++)
            done_before |= strcmp(r->manifest.items[r->interps[j]].root, in->root) == 0;
        if (!needed || done_before)
            continue;
        char err[CF_ERRMSG_LEN], why[CF_ERRMSG_LEN + 64];
        if (cf_sync_targets(r->targets, in->root, err, sizeof err) == CF_OK)
            continue;
        snprintf(why, sizeof why, "cannot copy the targets into %s: %s", in->root, err);
        for (size_t k = 0; k < r->ncases; k++) {
            case_slot *c = &r->cases[k];
            if (strcmp(r->manifest.items[c->interp].root, in->root) != 0 || c->skip[0] || c->result)
                continue;
            c->result = cf_case_stub(&r->manifest.items[c->interp], &r->index.items[c->scen], "error", why);
            if (!c->result)
                return CF_E_NOMEM;
        }
    }
    return CF_OK;
}

static void case_file(const conform_run *r, size_t k, const char *ext, char *out, size_t len)
{
    char name[64];
    snprintf(name, sizeof name, "case-%zu.%s", k, ext);
    if (cf_path_join(out, len, r->work, name))
        out[0] = '\0';
}

/* Body of a worker process: runs case k and writes its result file.
 * Returns the worker's exit status. */
static int worker_main(conform_run *r, size_t k)
{
    case_slot *c = &r->cases[k];
    const cf_interp *in = &r->manifest.items[c->interp];
    char safe[NAME_MAX], rel[PATH_MAX], dir[PATH_MAX], pgid[PATH_MAX], out[PATH_MAX];
    cf_sanitize_name(in->id, safe, sizeof safe);
    if (cf_path_join(rel, sizeof rel, "logs", safe) || cf_path_join(dir, sizeof dir, r->report, rel))
        return CF_EXIT_FAIL;
    case_file(r, k, "pgid", pgid, sizeof pgid);
    case_file(r, k, "json", out, sizeof out);
    cf_case_params p = {
        .interp = in,
        .scen = &r->index.items[c->scen],
        .targets_dir = r->targets,
        .log_dir = dir,
        .log_rel = rel,
        .pgid_path = pgid,
        .timeout_scale = r->o.timeout_scale,
        .adapters = r->o.adapters,
        .allow_untested = r->o.adapter.allow_untested,
        .fault = r->o.fault,
    };
    json_object *result = NULL;
    cf_live_budget budget = {.samples = r->o.live_samples, .seconds = r->o.live_seconds};
    if ((r->o.live ? cf_live_case_run(&p, &budget, &result) : cf_case_run(&p, &result)) != CF_OK)
        return CF_EXIT_FAIL;
    char err[CF_ERRMSG_LEN];
    int rc = cf_json_write_file(out, result, false, false, err, sizeof err);
    json_object_put(result);
    return rc == CF_OK ? CF_EXIT_OK : CF_EXIT_FAIL;
}

static void progress(conform_run *r, case_slot *c)
{
    r->finished++;
    const char *status = cf_json_str(c->result, "status", "error");
    const char *word = strcmp(status, "fail") == 0 ? "FAIL" : status;
    double secs = cf_json_double(c->result, "seconds", 0);
    fprintf(stderr, "[%zu/%zu] %s %s ... %s", r->finished, r->ncases, r->manifest.items[c->interp].id,
            r->index.items[c->scen].name, word);
    if (strcmp(status, "skip") != 0)
        fprintf(stderr, " (%.1fs)", secs);
    const char *summary = cf_json_str(c->result, "summary", "");
    if (strcmp(status, "pass") != 0 && *summary)
        fprintf(stderr, ": %s", summary);
    fputc('\n', stderr);
}

static int launch_worker(conform_run *r, size_t k)
{
    case_slot *c = &r->cases[k];
    fflush(NULL); /* nothing buffered may be written twice */
    pid_t pid = fork();
    if (pid < 0) {
        char why[CF_ERRMSG_LEN];
        snprintf(why, sizeof why, "cannot fork a worker: %s", strerror(errno));
        c->result = cf_case_stub(&r->manifest.items[c->interp], &r->index.items[c->scen], "error", why);
        c->state = SLOT_DONE;
        return c->result ? CF_OK : CF_E_NOMEM;
    }
    if (pid == 0)
        _exit(worker_main(r, k));
    c->worker = pid;
    c->state = SLOT_RUNNING;
    c->started = cf_now();
    return CF_OK;
}

/* Reads a finished worker's result; if there is none (the worker crashed),
 * kills the target group it left behind and records a harness error. */
static int collect(conform_run *r, size_t k, int status)
{
    case_slot *c = &r->cases[k];
    char path[PATH_MAX], pgid_path[PATH_MAX], err[CF_ERRMSG_LEN];
    case_file(r, k, "json", path, sizeof path);
    case_file(r, k, "pgid", pgid_path, sizeof pgid_path);
    c->state = SLOT_DONE;
    int rc = cf_json_read_file(path, &c->result, err, sizeof err);
    unlink(path);
    FILE *f = fopen(pgid_path, "re");
    if (f) {
        long pg = 0;
        if (fscanf(f, "%ld", &pg) == 1 && pg > 1)
            (void)killpg((pid_t)pg, SIGKILL);
        fclose(f);
        unlink(pgid_path);
    }
    if (rc == CF_OK)
        return CF_OK;
    if (rc == CF_E_NOMEM)
        return rc;
    char st[128], why[CF_ERRMSG_LEN + 256];
    cf_describe_status(status, st, sizeof st);
    snprintf(why, sizeof why,
             "the worker process running this case ended (%s) without a result: a crash in libframeproof or "
             "the harness; its target was killed",
             st);
    c->result = cf_case_stub(&r->manifest.items[c->interp], &r->index.items[c->scen], "error", why);
    if (c->result)
        cf_json_add(c->result, "seconds", cf_json_seconds(cf_now() - c->started));
    return c->result ? CF_OK : CF_E_NOMEM;
}

/* Runs every case, at most --jobs at a time.  Returns CF_OK or
 * CF_E_NOMEM; an interruption leaves later cases pending. */
static int schedule(conform_run *r)
{
    size_t next = 0, running = 0;
    bool stop_sent = false;
    int rc = CF_OK;
    for (;;) {
        if (cf_interrupted() && !stop_sent) {
            stop_sent = true;
            for (size_t k = 0; k < r->ncases; k++)
                if (r->cases[k].state == SLOT_RUNNING)
                    kill(r->cases[k].worker, SIGTERM);
        }
        while (rc == CF_OK && !cf_interrupted() && running < r->o.jobs && next < r->ncases) {
            case_slot *c = &r->cases[next];
            size_t k = next++;
            if (c->skip[0] || c->result) {
                if (!c->result)
                    c->result = skip_stub(r, c);
                c->state = SLOT_DONE;
                if (!c->result)
                    rc = CF_E_NOMEM;
                else
                    progress(r, c);
                continue;
            }
            rc = launch_worker(r, k);
            if (c->state == SLOT_RUNNING)
                running++;
            else if (rc == CF_OK)
                progress(r, c);
        }
        if (running == 0)
            break;
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) {
            struct timespec ts = {0, REAP_POLL_NS};
            nanosleep(&ts, NULL);
            continue;
        }
        for (size_t k = 0; k < r->ncases; k++) {
            case_slot *c = &r->cases[k];
            if (c->state != SLOT_RUNNING || c->worker != pid)
                continue;
            running--;
            int crc = collect(r, k, status);
            if (crc == CF_OK)
                progress(r, c);
            else
                rc = crc;
            break;
        }
    }
    return rc;
}

static void remove_work_dir(conform_run *r)
{
    if (!r->work[0])
        return;
    for (size_t k = 0; k < r->ncases; k++) {
        char path[PATH_MAX];
        case_file(r, k, "json", path, sizeof path);
        unlink(path);
        case_file(r, k, "pgid", path, sizeof path);
        unlink(path);
    }
    rmdir(r->work);
}

int cf_run(const cf_run_opts *o)
{
    conform_run r;
    memset(&r, 0, sizeof r);
    r.o = *o;
    if (!r.o.report_dir)
        r.o.report_dir = CF_DEFAULT_REPORT_DIR;
    if (!r.o.jobs)
        r.o.jobs = 1;
    if (!(r.o.timeout_scale > 0))
        r.o.timeout_scale = 1.0;
    if (!r.o.live_samples)
        r.o.live_samples = CF_LIVE_DEFAULT_SAMPLES;
    if (!(r.o.live_seconds > 0))
        r.o.live_seconds = CF_LIVE_DEFAULT_SECONDS;
    json_object *report = NULL;
    int status = CF_EXIT_FAIL;
    int st = load_inputs(&r);
    if (st >= 0) {
        status = st;
        goto out;
    }
    if (cf_signal_install() != CF_OK) {
        fprintf(stderr, "frameproof conform: cannot install signal handlers: %s\n", strerror(errno));
        goto out;
    }
    r.started = cf_now();
    if (prepare_dirs(&r) != CF_OK)
        goto out;
    if (build_cases(&r) != CF_OK || sync_roots(&r) != CF_OK || schedule(&r) != CF_OK) {
        fprintf(stderr, "frameproof conform: out of memory\n");
        /* Still write what is known below. */
    }
    bool interrupted = cf_interrupted();
    cf_run_totals t;
    if (cf_run_build_report(&r, interrupted, &report, &t) != CF_OK) {
        fprintf(stderr, "frameproof conform: out of memory building the report\n");
        goto out;
    }
    int wrc = r.o.live ? cf_live_write_reports(r.report, report) : cf_run_write_reports(&r, report);
    if (interrupted)
        status = CF_EXIT_INTERRUPTED;
    else if (t.fail || t.error || t.not_run || wrc != CF_OK)
        status = CF_EXIT_FAIL;
    else
        status = CF_EXIT_OK;
out:
    remove_work_dir(&r);
    json_object_put(report);
    for (size_t k = 0; k < r.ncases; k++)
        json_object_put(r.cases[k].result);
    free(r.cases);
    free(r.interps);
    free(r.scens);
    free(r.unwinder_names);
    cf_manifest_free(&r.manifest);
    cf_index_free(&r.index);
    return status;
}
