/* probe.c — learns an interpreter binary's version and build by running
 * it (see probe.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "channel.h"
#include "conform.h"
#include "probe.h"
#include "spawn.h"
#include "util.h"

/* Prints one manifest entry for the running interpreter. */
static const char PROBE_SCRIPT[] =
    "import json, platform, sys\n"
    "gil = getattr(sys, '_is_gil_enabled', None)\n"
    "print(json.dumps({'version': platform.python_version(),\n"
    "                  'free_threaded': gil is not None and not gil(),\n"
    "                  'debug': hasattr(sys, 'gettotalrefcount')}))\n";

int cf_probe_interpreter(const char *path, double timeout, cf_manifest *m, char *err, size_t errlen)
{
    char abs[PATH_MAX];
    if (!realpath(path, abs)) {
        snprintf(err, errlen, "--python-path %s: %s", path, strerror(errno));
        return CF_E_IO;
    }
    if (access(abs, X_OK) != 0) {
        snprintf(err, errlen, "--python-path %s: not executable", abs);
        return CF_E_IO;
    }
    int rc = CF_OK;
    int out[2] = {-1, -1};
    cf_child child;
    cf_linebuf lb;
    json_object *info = NULL, *entry = NULL;
    memset(&child, 0, sizeof child);
    cf_linebuf_init(&lb);
    char *argv[] = {abs, "-I", "-c", (char *)PROBE_SCRIPT, NULL};
    char why[CF_ERRMSG_LEN] = "";
    if (pipe2(out, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return CF_E_IO;
    }
    cf_spawn_req req = {.argv = argv, .stdout_fd = out[1], .stderr_fd = -1, .channel = false};
    rc = cf_spawn(&req, &child, why, sizeof why);
    close(out[1]);
    if (rc) {
        snprintf(err, errlen, "--python-path %s: cannot run it: %s", abs, why);
        goto out;
    }
    char *line;
    size_t len;
    rc = cf_linebuf_read(&lb, out[0], cf_now() + timeout, &line, &len);
    if (rc == CF_E_NOMEM)
        goto out;
    if ((rc != CF_OK && rc != CF_E_EOF) || len == 0 || cf_channel_parse(line, len, &info, why, sizeof why)) {
        snprintf(err, errlen, "--python-path %s: it did not print its version (%s); is it a CPython interpreter?",
                 abs, rc == CF_E_TIMEOUT ? "timed out" : len == 0 ? "no output" : why);
        rc = rc == CF_E_TIMEOUT ? CF_E_TIMEOUT : CF_E_FORMAT;
        goto out;
    }
    entry = json_object_new_object();
    json_object *argvj = json_object_new_array();
    if (!entry || !argvj || cf_json_push(argvj, json_object_new_string(abs)) ||
        cf_json_add(entry, "id", json_object_new_string(abs)) ||
        cf_json_add(entry, "version", json_object_new_string(cf_json_str(info, "version", ""))) ||
        cf_json_add(entry, "free_threaded", json_object_new_boolean(cf_json_bool(info, "free_threaded", false))) ||
        cf_json_add(entry, "debug", json_object_new_boolean(cf_json_bool(info, "debug", false))) ||
        cf_json_add(entry, "root", json_object_new_string("/")) || cf_json_add(entry, "argv", argvj)) {
        rc = CF_E_NOMEM;
        goto out;
    }
    rc = cf_manifest_add(m, entry, why, sizeof why);
    if (rc && rc != CF_E_NOMEM)
        snprintf(err, errlen, "--python-path %s: %s", abs, why);
out:
    cf_child_kill(&child);
    close(out[0]);
    cf_linebuf_free(&lb);
    json_object_put(info);
    json_object_put(entry);
    return rc;
}
