/* maps.c — reading and parsing /proc/PID/maps into fpi_maps. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frameproof/frameproof.h"
#include "maps.h"

#define MAPS_READ_CHUNK 65536u

static const char DELETED_SUFFIX[] = " (deleted)";

static int parse_hex(const char **p, const char *end, uint64_t *out)
{
    uint64_t v = 0;
    int digits = 0;
    while (*p < end) {
        char c = **p;
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else break;
        if (digits >= 16)
            return -1;
        v = v << 4 | (uint64_t)d;
        digits++;
        (*p)++;
    }
    if (!digits)
        return -1;
    *out = v;
    return 0;
}

static void skip_field(const char **p, const char *end)
{
    while (*p < end && **p != ' ') (*p)++;
    while (*p < end && **p == ' ') (*p)++;
}

static int parse_line(const char *p, const char *end, fpi_mapping *m)
{
    memset(m, 0, sizeof *m);
    if (parse_hex(&p, end, &m->start) || p >= end || *p != '-')
        return -1;
    p++;
    if (parse_hex(&p, end, &m->end) || p >= end || *p != ' ' || m->end < m->start)
        return -1;
    p++;
    if (end - p < 5)
        return -1;
    m->readable = p[0] == 'r';
    m->writable = p[1] == 'w';
    m->executable = p[2] == 'x';
    p += 4;
    if (p >= end || *p != ' ')
        return -1;
    p++;
    if (parse_hex(&p, end, &m->offset))
        return -1;
    while (p < end && *p == ' ') p++;
    skip_field(&p, end); /* dev */
    skip_field(&p, end); /* inode */
    if (p < end && *p != '\0') {
        size_t len = (size_t)(end - p);
        if (len > FPI_MAPS_MAX_PATH)
            return -1;
        size_t sl = sizeof DELETED_SUFFIX - 1;
        if (len > sl && memcmp(end - sl, DELETED_SUFFIX, sl) == 0) {
            m->deleted = true;
            len -= sl;
        }
        m->path = strndup(p, len);
        if (!m->path)
            return -2;
    }
    return 0;
}

int fpi_maps_parse(const char *text, size_t len, fpi_maps *out, fpi_errbuf *eb)
{
    size_t cap = 0;
    out->v = NULL;
    out->n = 0;
    const char *p = text, *end = text + len;
    size_t lineno = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        if (le > p) {
            if (out->n >= FPI_MAPS_MAX_ENTRIES) {
                fpi_maps_free(out);
                return fpi_err(eb, FP_E_LIMIT, "memory maps: more than %u mappings", FPI_MAPS_MAX_ENTRIES);
            }
            if (out->n == cap) {
                size_t ncap = cap ? cap * 2 : 64;
                fpi_mapping *nv = realloc(out->v, ncap * sizeof *nv);
                if (!nv) {
                    fpi_maps_free(out);
                    return fpi_err(eb, FP_E_NOMEM, "out of memory: %zu mappings", ncap);
                }
                out->v = nv;
                cap = ncap;
            }
            int rc = parse_line(p, le, &out->v[out->n]);
            if (rc == -2) {
                fpi_maps_free(out);
                return fpi_err(eb, FP_E_NOMEM, "out of memory: mapping on maps line %zu", lineno);
            }
            if (rc) {
                fpi_maps_free(out);
                return fpi_err(eb, FP_E_FORMAT, "memory maps: line %zu is malformed", lineno);
            }
            out->n++;
        }
        p = nl ? nl + 1 : end;
    }
    return FP_OK;
}

int fpi_maps_read_pid(int pid, fpi_maps *out, fpi_errbuf *eb)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        int code = fpi_errno_code(err);
        if (code == FP_E_PROCESS_GONE)
            return fpi_err(eb, code, "process %d: does not exist", pid);
        return fpi_err(eb, code, "cannot open %s: %s", path, strerror(err));
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < MAPS_READ_CHUNK) {
            if (cap >= FPI_MAPS_MAX_BYTES) {
                free(buf);
                close(fd);
                return fpi_err(eb, FP_E_LIMIT, "%s: larger than %u bytes", path, FPI_MAPS_MAX_BYTES);
            }
            size_t ncap = cap ? cap * 2 : MAPS_READ_CHUNK * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                close(fd);
                return fpi_err(eb, FP_E_NOMEM, "out of memory: reading %s", path);
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int err = errno;
            free(buf);
            close(fd);
            return fpi_err(eb, fpi_errno_code(err), "reading %s: %s", path, strerror(err));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    int rc = fpi_maps_parse(buf, len, out, eb);
    free(buf);
    if (rc == FP_OK && out->n == 0) {
        fpi_maps_free(out);
        return fpi_err(eb, FP_E_PROCESS_GONE, "process %d: no memory mappings (exited or a zombie)", pid);
    }
    return rc;
}

void fpi_maps_free(fpi_maps *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].path);
    free(m->v);
    m->v = NULL;
    m->n = 0;
}

bool fpi_maps_contains(const fpi_maps *m, uint64_t addr, uint64_t len)
{
    for (size_t i = 0; i < m->n; i++) {
        const fpi_mapping *e = &m->v[i];
        if (e->readable && addr >= e->start && addr < e->end)
            return len <= e->end - addr;
    }
    return false;
}

int fpi_maps_open_file(int pid, const fpi_mapping *m, char *used, size_t usedlen)
{
    char path[FPI_MAPS_MAX_PATH + 64];
    int fd = -1;
    if (!m->deleted) {
        snprintf(path, sizeof path, "/proc/%d/root%s", pid, m->path);
        fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0) {
        snprintf(path, sizeof path, "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)m->start,
                 (unsigned long long)m->end);
        fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    snprintf(used, usedlen, "%s", path);
    return fd;
}
