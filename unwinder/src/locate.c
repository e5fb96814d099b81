/* locate.c — the runtime locator: every mapping of a file named like
 * python or libpython is a candidate; for each, the .PyRuntime section and
 * the _PyRuntime symbol give a runtime address, Py_Version the version, and
 * the layout (debug offsets or a built-in table) is validated before the
 * candidate is accepted.  Duplicate, uninitialised mappings (libpython
 * dlopen'ed twice) fail validation and are skipped. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debug_offsets.h"
#include "fp_facts.h"
#include "fpi_limits.h"
#include "locate.h"
#include "locate_elf.h"
#include "maps.h"
#include "proc_state.h"
#include "versions.h"

void fpi_format_version(uint32_t hex, char *buf, size_t len)
{
    unsigned major = hex >> 24, minor = (hex >> 16) & 0xff, micro = (hex >> 8) & 0xff;
    unsigned level = (hex >> 4) & 0xf, serial = hex & 0xf;
    const char *tag = level == 0xA ? "a" : level == 0xB ? "b" : level == 0xC ? "rc" : "";
    if (*tag)
        snprintf(buf, len, "%u.%u.%u%s%u", major, minor, micro, tag, serial);
    else
        snprintf(buf, len, "%u.%u.%u", major, minor, micro);
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* Version from a file name such as python3.10 or libpython3.9d.so; 0 if none. */
static uint32_t version_from_name(const char *path)
{
    const char *b = strstr(base_name(path), "python");
    if (!b)
        return 0;
    unsigned major, minor;
    if (sscanf(b, "python%u.%u", &major, &minor) == 2 && major < 10 && minor < 100)
        return (major << 24) | (minor << 16);
    return 0;
}

int fpi_layout_resolve(fp_session *s, uint64_t runtime, uint32_t hexversion, bool free_threaded,
                      bool debug, fpi_errbuf *why)
{
    unsigned major = fpi_hex_major(hexversion), minor = hexversion ? fpi_hex_minor(hexversion) : 0;
    bool untested = hexversion && fpi_minor_untested(major, minor);
    if (hexversion && (major != FPI_PY_MAJOR || minor < FPI_MINOR_OLDEST || (untested && !s->opts.allow_untested)))
        return fpi_err_unsupported(why, major, minor);
    fpi_layout l;
    if (hexversion == 0 || minor >= FPI_MINOR_DEBUG_OFFSETS) {
        uint8_t table[FPI_DEBUG_OFFSETS_READ];
        int rc = fp_reader_read(s->rd, runtime, table, sizeof table);
        if (rc)
            return fpi_err_code(why, rc, "cannot read _PyRuntime at 0x%llx", (unsigned long long)runtime);
        rc = fpi_debug_offsets_parse_opt(table, sizeof table, s->opts.allow_untested, &l, why);
        if (rc)
            return rc;
        if (hexversion && ((l.hexversion ^ hexversion) & 0xffff0000u))
            return fpi_err(why, FP_E_CORRUPT, "Py_Version 0x%08x: the debug offsets say 0x%08x",
                          hexversion, l.hexversion);
    } else {
        if (free_threaded)
            return fpi_err(why, FP_E_UNSUPPORTED, "free-threaded CPython 3.%u: no such build", minor);
        if (debug)
            return fpi_err(why, FP_E_UNSUPPORTED,
                          "debug build of CPython 3.%u: not supported (no verified layout)", minor);
        l = *(minor == 11 ? fpi_layout_builtin_311() : fpi_layout_builtin_312());
        l.hexversion = hexversion;
    }
    l.debug = debug;
    /* An initialised runtime has a readable interpreter list. */
    uint64_t head = 0;
    int rc = fp_reader_read(s->rd, runtime + (uint64_t)l.rt_interpreters_head, &head, sizeof head);
    if (rc)
        return fpi_err_code(why, rc, "cannot read the interpreter list");
    if (head == 0)
        return fpi_err(why, FP_E_NOT_PYTHON, "runtime: no interpreter (not initialised yet, or finalised)");
    uint64_t probe;
    if ((rc = fp_reader_read(s->rd, head + (uint64_t)l.interp_threads_head, &probe, sizeof probe)))
        return fpi_err(why, FP_E_NOT_PYTHON, "interpreter list: points to unreadable memory (0x%llx)",
                      (unsigned long long)head);
    s->layout = l;
    memset(&s->info, 0, sizeof s->info);
    s->info.hexversion = l.hexversion;
    fpi_format_version(l.hexversion, s->info.version, sizeof s->info.version);
    s->info.free_threaded = l.free_threaded;
    s->info.debug = debug;
    s->info.runtime_addr = runtime;
    s->info.untested = fpi_minor_untested(fpi_hex_major(l.hexversion), fpi_hex_minor(l.hexversion));
    return FP_OK;
}

typedef struct candidate {
    const fpi_mapping *map;
} candidate;


static int try_candidate(fp_session *s, int pid, const fpi_mapping *m, fpi_errbuf *log, int *best)
{
    char used[FPI_MAPS_MAX_PATH + 64];
    fpi_errbuf why = {{0}};
    int fd = fpi_maps_open_file(pid, m, used, sizeof used);
    if (fd < 0) {
        int err = errno;
        fpi_err_append(log, "%s%s at 0x%llx: cannot open (%s)", log->msg[0] ? "; " : "", m->path, (unsigned long long)m->start, strerror(err));
        if (*best == FP_E_NOT_PYTHON && (err == EACCES || err == EPERM))
            *best = FP_E_PERMISSION;
        return FP_E_IO;
    }
    fpi_elf_info ei;
    int rc = fpi_elf_inspect_fd(fd, &ei, &why);
    close(fd);
    if (rc) {
        fpi_err_append(log, "%s%s: %s", log->msg[0] ? "; " : "", m->path, why.msg);
        return rc;
    }
    if (!ei.has_load) {
        fpi_err_append(log, "%s%s: no loadable segment", log->msg[0] ? "; " : "", m->path);
        return FP_E_FORMAT;
    }
    uint64_t bias = m->start - ei.load_vaddr;
    uint32_t hex = 0;
    if (ei.has_version_sym) {
        uint64_t v = 0;
        if (fp_reader_read(s->rd, bias + ei.version_sym, &v, sizeof v) == FP_OK && v <= UINT32_MAX)
            hex = (uint32_t)v;
    } else {
        uint32_t named = version_from_name(m->path);
        if (named && ((named >> 24) != FPI_PY_MAJOR || ((named >> 16) & 0xff) < FPI_MINOR_OLDEST)) {
            fpi_err_append(log, "%s%s: CPython %u.%u", log->msg[0] ? "; " : "", m->path, named >> 24, (named >> 16) & 0xff);
            *best = FP_E_UNSUPPORTED;
            fpi_err_unsupported(&why, named >> 24, (named >> 16) & 0xff);
            s->err = why;
            return FP_E_UNSUPPORTED;
        }
    }
    struct { const char *what; bool have; uint64_t addr; } ways[] = {
        {"section .PyRuntime", ei.has_section, bias + ei.section_addr},
        {"symbol _PyRuntime", ei.has_runtime_sym, bias + ei.runtime_sym},
    };
    for (size_t i = 0; i < sizeof ways / sizeof ways[0]; i++) {
        if (!ways[i].have) {
            fpi_err_append(log, "%s%s: %s: absent", log->msg[0] ? "; " : "", m->path, ways[i].what);
            continue;
        }
        if (i == 1 && ways[0].have && ways[0].addr == ways[1].addr)
            continue;
        why.msg[0] = 0;
        rc = fpi_layout_resolve(s, ways[i].addr, hex, false, ei.debug_build, &why);
        if (rc == FP_OK) {
            snprintf(s->info.binary, sizeof s->info.binary, "%s", m->path);
            return FP_OK;
        }
        fpi_err_append(log, "%s%s: %s at 0x%llx: %s", log->msg[0] ? "; " : "", m->path, ways[i].what, (unsigned long long)ways[i].addr,
                      why.msg);
        if (rc == FP_E_UNSUPPORTED) {
            *best = FP_E_UNSUPPORTED;
            s->err = why;
        } else if (rc == FP_E_PERMISSION || rc == FP_E_PROCESS_GONE) {
            *best = rc;
        }
    }
    return FP_E_NOT_PYTHON;
}

int fpi_locate_pid(fp_session *s, int pid)
{
    fpi_maps maps;
    int rc = fpi_maps_read_pid(pid, &maps, &s->err);
    if (rc) {
        if (rc == FP_E_PROCESS_GONE)
            return fpi_err(&s->err, rc, "process %d: does not exist or exited", pid);
        if (rc == FP_E_PERMISSION)
            return fpi_err(&s->err, rc, "permission denied reading process %d: run as its user or with CAP_SYS_PTRACE", pid);
        return rc;
    }
    if (s->opts.reader == FP_READER_AUTO) {
        /* Kernels without process_vm_readv (ENOSYS): use /proc/PID/mem. */
        for (size_t i = 0; i < maps.n; i++) {
            uint8_t probe[8];
            if (!maps.v[i].readable || maps.v[i].end - maps.v[i].start < sizeof probe)
                continue;
            if (fp_reader_read(s->rd, maps.v[i].start, probe, sizeof probe) == FP_E_UNSUPPORTED) {
                char msg[FPI_ERRMSG_MAX] = "";
                fp_reader_close(&s->own_reader);
                rc = fp_reader_open_mem(pid, &s->own_reader, msg, sizeof msg);
                if (rc) {
                    fpi_maps_free(&maps);
                    return fpi_err(&s->err, rc, "process_vm_readv: unavailable, and %s", msg);
                }
                s->rd = &s->own_reader;
            }
            break;
        }
    }
    fpi_errbuf log = {{0}};
    int best = FP_E_NOT_PYTHON;
    size_t tried = 0;
    for (size_t i = 0; i < maps.n && tried < FPI_MAX_CANDIDATES; i++) {
        const fpi_mapping *m = &maps.v[i];
        if (!m->path || m->offset != 0 || !strstr(base_name(m->path), "python"))
            continue;
        tried++;
        rc = try_candidate(s, pid, m, &log, &best);
        if (rc == FP_OK) {
            fpi_maps_free(&maps);
            return FP_OK;
        }
        if (best == FP_E_PROCESS_GONE || best == FP_E_PERMISSION)
            break;
    }
    size_t nmaps = maps.n;
    fpi_maps_free(&maps);
    if (best == FP_E_UNSUPPORTED)
        return FP_E_UNSUPPORTED; /* s->err holds the version message */
    if (best == FP_E_PROCESS_GONE || fpi_proc_is_gone(pid))
        return fpi_err(&s->err, FP_E_PROCESS_GONE, "process %d: exited", pid);
    if (best == FP_E_PERMISSION)
        return fpi_err(&s->err, FP_E_PERMISSION,
                      "permission denied reading process %d: run as its user or with CAP_SYS_PTRACE", pid);
    if (tried == 0)
        return fpi_err(&s->err, FP_E_NOT_PYTHON,
                      "process %d is not running Python (searched: mappings of files named like python or "
                      "libpython in /proc/%d/maps: none of %zu mappings)", pid, pid, nmaps);
    return fpi_err(&s->err, FP_E_NOT_PYTHON, "process %d is not running Python (searched: %s)", pid, log.msg);
}
