/* registry.c — the registry of unwinders under test: which names
 * --unwinder accepts and the configurations each one contributes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "conform.h"
#include "registry.h"

typedef struct unwinder_entry {
    const char *name;
    /* Checks the options the unwinder needs (NULL: none): CF_OK, or an error
     * with a message. */
    int (*check)(const cf_adapter_opts *o, char *err, size_t errlen);
    size_t (*defs)(cf_adapter_def *out, size_t cap, const cf_adapter_opts *o);
} unwinder_entry;

static size_t frameproof_defs(cf_adapter_def *out, size_t cap, const cf_adapter_opts *o)
{
    (void)o;
    return cf_frameproof_defs(out, cap);
}

static size_t cpython_defs(cf_adapter_def *out, size_t cap, const cf_adapter_opts *o)
{
    (void)o;
    return cf_cpython_defs(out, cap);
}

static const unwinder_entry UNWINDERS[] = {
    {"frameproof", NULL, frameproof_defs},
    {"cpython", NULL, cpython_defs},
    {"austin", NULL, cf_austin_defs},
    {"command", cf_command_check_opts, cf_command_defs},
};
#define NUM_UNWINDERS (sizeof UNWINDERS / sizeof UNWINDERS[0])

static const char UNWINDER_HELP[] =
    "  NAME:CONFIG selects one configuration of an unwinder, as the reports\n"
    "  label it (e.g. frameproof:vm+cache, cpython:cache-on).\n"
    "  frameproof   libframeproof, 6 configurations: reader vm\n"
    "               (process_vm_readv) or mem (/proc/PID/mem) x code and frame\n"
    "               caches on or off, vm+cache+blocking (every thread stopped with ptrace\n"
    "               for each sample) and vm+cache+colocate (each sample taken from\n"
    "               the CPU the target's GIL holder, else its main thread, last\n"
    "               ran on, a torn thread walked again from its own CPU);\n"
    "               vm+cache+pause-torn (threads torn twice stopped) and\n"
    "               vm+cache+colocate+pause-torn (both: record's default) only\n"
    "               by name; one session per configuration kept across\n"
    "               the checkpoints of a case, 3 samples per checkpoint\n"
    "  cpython      CPython's own _remote_debugging.RemoteUnwinder, run by the\n"
    "               target's own interpreter in its root as one helper process\n"
    "               per case: cache-off on 3.14 and 3.15, cache-on\n"
    "               (cache_frames=True, which writes into the target) on 3.15;\n"
    "               cache-on+colocate (only by name): cache-on with the helper\n"
    "               moved before each sample as vm+cache+colocate moves itself;\n"
    "               compared on function (co_qualname), file, line and native\n"
    "               id, and on 3.15 also end line, columns, main and exception\n"
    "  austin       Debian's austin 3.7 (installed in the sid root by\n"
    "               targets/provision), one `austin -b -x 1 -i 1s -p PID` run per\n"
    "               sample (its MOJO stream's first pass), 1 sample per\n"
    "               checkpoint; applies where austin 3.7 claims support (3.8 to\n"
    "               3.13); compared on function (qualname), file, line, end\n"
    "               line, columns and native id\n"
    "  command      any external unwinder: --unwinder-cmd 'CMD ... {pid}' is run\n"
    "               through /bin/sh once per sample with {pid} replaced by the\n"
    "               target's pid; it prints one JSON document in the protocol of\n"
    "               docs/unwinder-protocol.md (`frameproof dump --json` is one);\n"
    "               the fields it reports are the keys its output carries, or\n"
    "               --unwinder-cmd-fields LIST (comma-separated: function, name,\n"
    "               file, line, end_line, column, end_column, kind, native_id,\n"
    "               thread_id, main, exception, all_threads)\n";

const char *cf_unwinder_help(void)
{
    return UNWINDER_HELP;
}

/* The entry named by `name` up to its ':' (or its end). */
static const unwinder_entry *find(const char *name)
{
    size_t len = strcspn(name, ":");
    for (size_t i = 0; i < NUM_UNWINDERS; i++)
        if (strlen(UNWINDERS[i].name) == len && strncmp(UNWINDERS[i].name, name, len) == 0)
            return &UNWINDERS[i];
    return NULL;
}

/* NAME:CONFIG keeps only that configuration of the n just added at defs;
 * returns how many remain, or (size_t)-1 with a message when none has it. */
static size_t select_config(const char *name, cf_adapter_def *defs, size_t n, char *err, size_t errlen)
{
    const char *colon = strchr(name, ':');
    if (!colon) {
        size_t kept = 0;
        for (size_t i = 0; i < n; i++)
            if (!defs[i].named_only)
                defs[kept++] = defs[i];
        return kept;
    }
    for (size_t i = 0; i < n; i++)
        if (defs[i].config && strcmp(defs[i].config, colon + 1) == 0) {
            defs[0] = defs[i];
            return 1;
        }
    int len = snprintf(err, errlen, "unknown configuration \"%s\" of %.*s; known:", colon + 1, (int)(colon - name),
                       name);
    for (size_t i = 0; i < n && len >= 0 && (size_t)len < errlen; i++)
        len += snprintf(err + len, errlen - (size_t)len, " %s", defs[i].config ? defs[i].config : "(none)");
    return (size_t)-1;
}

int cf_adapter_set_build(const char *const *names, size_t n, const cf_adapter_opts *o, cf_adapter_set *out,
                         char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->defs = calloc(n * CF_MAX_CONFIGS_PER_UNWINDER + 1, sizeof *out->defs);
    if (!out->defs)
        return CF_E_NOMEM;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < i; k++)
            seen |= strcmp(names[k], names[i]) == 0;
        if (seen)
            continue;
        const unwinder_entry *e = find(names[i]);
        if (!e) {
            int len = snprintf(err, errlen, "unknown unwinder \"%s\"; known:", names[i]);
            for (size_t k = 0; k < NUM_UNWINDERS && len >= 0 && (size_t)len < errlen; k++)
                len += snprintf(err + len, errlen - (size_t)len, " %s", UNWINDERS[k].name);
            cf_adapter_set_free(out);
            return CF_E_NOTFOUND;
        }
        int rc = e->check ? e->check(o, err, errlen) : CF_OK;
        if (rc) {
            cf_adapter_set_free(out);
            return rc == CF_E_NOMEM ? rc : CF_E_NOTFOUND;
        }
        size_t added = e->defs(out->defs + out->count, CF_MAX_CONFIGS_PER_UNWINDER, o);
        if ((added = select_config(names[i], out->defs + out->count, added, err, errlen)) == (size_t)-1) {
            cf_adapter_set_free(out);
            return CF_E_NOTFOUND;
        }
        out->count += added;
    }
    return CF_OK;
}
