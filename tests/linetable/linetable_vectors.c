/* linetable_vectors.c — the vector test of the location-table decoder:
 * every code unit of every code object in corpora/linetables/<id>/ (format:
 * corpora/linetables/FORMAT.md) decoded and compared with what
 * code.co_positions() gave inside that interpreter (linetable_vectors.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "frameproof/frameproof.h"
#include "linetable.h"
#include "linetable_vectors.h"

#define NONE FP_POS_NONE
#define VEC_FILE_NAME "stdlib.fplt.z"
#define VEC_SAME_AS_NAME "SAME_AS"
#define VEC_MAGIC "FPLT"
#define VEC_MAGIC_LEN 4u
#define VEC_VERSION 1u
#define VEC_SECTIONS 8u
#define VEC_MAX_FILE_BYTES ((size_t)256 * 1024 * 1024)
#define VEC_MAX_PAYLOAD_BYTES ((size_t)1024 * 1024 * 1024)
#define VEC_INFLATE_CHUNK ((size_t)1 << 20)
#define VEC_UVAR_MAX_BYTES 10u
#define VEC_MAX_REPORTED 20u
/* Also check fpi_linetable_lookup() at every run start of tables up to this
 * size (lookup is linear, so this is quadratic per code object). */
#define VEC_LOOKUP_TABLE_MAX 512u

typedef struct cursor {
    const uint8_t *p;
    size_t len, pos;
    int bad;
} cursor;

static uint64_t cur_uvar(cursor *c)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < VEC_UVAR_MAX_BYTES; i++) {
        if (c->pos >= c->len) {
            break;
        }
        uint8_t b = c->p[c->pos++];
        v |= (uint64_t)(b & 0x7fu) << (7u * i);
        if (!(b & 0x80u)) {
            return v;
        }
    }
    c->bad = 1;
    return 0;
}

static int64_t cur_svar(cursor *c)
{
    uint64_t u = cur_uvar(c);
    return (u & 1u) ? -(int64_t)(u >> 1) - 1 : (int64_t)(u >> 1);
}

/* Takes n bytes from c as a sub-cursor (or marks c bad). */
static cursor cur_take(cursor *c, uint64_t n)
{
    cursor s = {NULL, 0, 0, 1};
    if (c->bad || n > c->len - c->pos) {
        c->bad = 1;
        return s;
    }
    s.p = c->p + c->pos;
    s.len = (size_t)n;
    s.bad = 0;
    c->pos += (size_t)n;
    return s;
}

static uint8_t *read_whole_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : VEC_INFLATE_CHUNK;
            if (ncap > VEC_MAX_FILE_BYTES) {
                free(buf);
                fclose(f);
                return NULL;
            }
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            break;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static uint8_t *inflate_all(const uint8_t *in, size_t in_len, size_t *out_len)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit(&zs) != Z_OK) {
        return NULL;
    }
    uint8_t *out = NULL;
    size_t cap = 0, n = 0;
    int rc = Z_OK;
    zs.next_in = (Bytef *)(uintptr_t)in;
    zs.avail_in = (uInt)in_len;
    if ((size_t)zs.avail_in != in_len) {
        inflateEnd(&zs);
        return NULL;
    }
    while (rc != Z_STREAM_END) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : VEC_INFLATE_CHUNK;
            uint8_t *nb = ncap <= VEC_MAX_PAYLOAD_BYTES ? realloc(out, ncap) : NULL;
            if (!nb) {
                break;
            }
            out = nb;
            cap = ncap;
        }
        size_t room = cap - n;
        zs.next_out = out + n;
        zs.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
        uInt before = zs.avail_out;
        rc = inflate(&zs, Z_NO_FLUSH);
        n += before - zs.avail_out;
        if (rc != Z_OK && rc != Z_STREAM_END) {
            break;
        }
        if (rc == Z_OK && before == zs.avail_out && zs.avail_in == 0) {
            break; /* truncated stream */
        }
    }
    int ok = rc == Z_STREAM_END && zs.avail_in == 0;
    inflateEnd(&zs);
    if (!ok) {
        free(out);
        return NULL;
    }
    *out_len = n;
    return out;
}

static int valid_id(const char *s)
{
    if (!*s || strlen(s) >= VEC_MAX_ID_LEN || s[0] == '.') {
        return 0;
    }
    for (; *s; s++) {
        if (!isalnum((unsigned char)*s) && *s != '.' && *s != '-' && *s != '_') {
            return 0;
        }
    }
    return 1;
}

/* Resolves <corpus>/<id>/ to its vector file, following one SAME_AS. */
static int vector_path(const char *corpus, const char *id, char *out, size_t cap)
{
    struct stat st;
    int n = snprintf(out, cap, "%s/%s/%s", corpus, id, VEC_FILE_NAME);
    if (n > 0 && (size_t)n < cap && stat(out, &st) == 0) {
        return 0;
    }
    char same[VEC_MAX_PATH];
    n = snprintf(same, sizeof same, "%s/%s/%s", corpus, id, VEC_SAME_AS_NAME);
    if (n < 0 || (size_t)n >= sizeof same) {
        return -1;
    }
    FILE *f = fopen(same, "r");
    if (!f) {
        print_error("# %s: neither %s nor %s\n", id, VEC_FILE_NAME, VEC_SAME_AS_NAME);
        return -1;
    }
    char target[VEC_MAX_ID_LEN + 2] = {0};
    int got = fgets(target, sizeof target, f) != NULL;
    fclose(f);
    target[strcspn(target, " \t\r\n")] = '\0';
    if (!got || !valid_id(target) || strcmp(target, id) == 0) {
        print_error("# %s: bad %s\n", id, VEC_SAME_AS_NAME);
        return -1;
    }
    n = snprintf(out, cap, "%s/%s/%s", corpus, target, VEC_FILE_NAME);
    if (n < 0 || (size_t)n >= cap || stat(out, &st) != 0) {
        print_error("# %s: %s names %s, which has no %s\n", id,
                    VEC_SAME_AS_NAME, target, VEC_FILE_NAME);
        return -1;
    }
    return 0;
}

typedef struct vec_run {
    uint64_t count;
    int64_t line, end_line, col, end_col;
} vec_run;

/* Section indices, in file order. */
enum { S_META, S_QUAL, S_TABLE, S_COUNT, S_DLINE, S_DEND, S_COL, S_DENDCOL };

/* One parsed vector file; the sections are consumed as records are read. */
typedef struct vec_file {
    uint8_t *data;
    size_t len;
    cursor base;      /* id of the base directory, empty for none */
    cursor ranges;    /* (skip, take) pairs over the base's records */
    uint64_t nranges;
    uint64_t nfiles;
    cursor *names;
    uint64_t ncode;
    cursor s[VEC_SECTIONS];
} vec_file;

typedef struct vec_check {
    const vec_case *vc;
    uint64_t records, units, mismatches;
    unsigned reported;
} vec_check;

static void vec_file_free(vec_file *vf)
{
    free(vf->names);
    free(vf->data);
    memset(vf, 0, sizeof *vf);
}

/* Loads and parses the header of one vector file.  On failure returns -1
 * with a message in err. */
static int vec_file_load(const char *path, vec_file *vf, char *err, size_t errcap)
{
    memset(vf, 0, sizeof *vf);
    size_t raw_len = 0, len = 0;
    uint8_t *data = read_whole_file(path, &raw_len);
    if (!data) {
        snprintf(err, errcap, "cannot read %s", path);
        return -1;
    }
    len = raw_len;
    if (raw_len < VEC_MAGIC_LEN || memcmp(data, VEC_MAGIC, VEC_MAGIC_LEN) != 0) {
        uint8_t *raw = data;
        data = inflate_all(raw, raw_len, &len);
        free(raw);
        if (!data) {
            snprintf(err, errcap, "%s is not a valid zlib stream", path);
            return -1;
        }
    }
    vf->data = data;
    vf->len = len;
    if (len < VEC_MAGIC_LEN + 4 || memcmp(data, VEC_MAGIC, VEC_MAGIC_LEN) != 0) {
        snprintf(err, errcap, "bad magic in %s", path);
        return -1;
    }
    uint32_t version = (uint32_t)data[4] | (uint32_t)data[5] << 8 |
                       (uint32_t)data[6] << 16 | (uint32_t)data[7] << 24;
    if (version != VEC_VERSION) {
        snprintf(err, errcap, "%s: unsupported version %u", path, version);
        return -1;
    }
    cursor c = {data, len, VEC_MAGIC_LEN + 4, 0};
    vf->base = cur_take(&c, cur_uvar(&c));
    if (vf->base.len > 0) {
        vf->nranges = cur_uvar(&c);
        size_t start = c.pos;
        for (uint64_t i = 0; i < vf->nranges && !c.bad; i++) {
            (void)cur_uvar(&c);
            (void)cur_uvar(&c);
        }
        if (!c.bad) {
            vf->ranges = (cursor){data + start, c.pos - start, 0, 0};
        }
    }
    vf->nfiles = cur_uvar(&c);
    if (c.bad || vf->nfiles > len) {
        snprintf(err, errcap, "%s: bad header", path);
        return -1;
    }
    vf->names = calloc(vf->nfiles ? (size_t)vf->nfiles : 1u, sizeof *vf->names);
    if (!vf->names) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    for (uint64_t i = 0; i < vf->nfiles; i++) {
        vf->names[i] = cur_take(&c, cur_uvar(&c));
    }
    vf->ncode = cur_uvar(&c);
    for (unsigned i = 0; i < VEC_SECTIONS; i++) {
        vf->s[i] = cur_take(&c, cur_uvar(&c));
    }
    if (c.bad || c.pos != c.len) {
        snprintf(err, errcap, "%s: malformed header or sections", path);
        return -1;
    }
    return 0;
}

static int same_pos(const fpi_position *p, const vec_run *r)
{
    return p->line == r->line && p->end_line == r->end_line &&
           p->column == r->col && p->end_column == r->end_col;
}

static void report(vec_check *ck, const char *how, const cursor *qual,
                   const char *file, uint64_t unit, const vec_run *r,
                   const fpi_position *p, int rc)
{
    ck->mismatches++;
    if (++ck->reported > VEC_MAX_REPORTED) {
        return;
    }
    print_error("# %s: %s: %.*s (%s) unit %llu: expected (%lld, %lld, %lld, "
                "%lld), got (%d, %d, %d, %d) rc %d\n", ck->vc->id, how,
                (int)qual->len, (const char *)qual->p, file,
                (unsigned long long)unit, (long long)r->line,
                (long long)r->end_line, (long long)r->col, (long long)r->end_col,
                p->line, p->end_line, p->column, p->end_column, rc);
}

/* Reads the next record of vf; if `compare`, checks the decoder against its
 * expected positions for every code unit.  Returns -1 if the file is
 * malformed. */
static int vec_record(vec_file *vf, int compare, vec_check *ck)
{
    cursor *s = vf->s;
    uint64_t fidx = cur_uvar(&s[S_META]);
    int64_t first = cur_svar(&s[S_META]);
    uint64_t nunits = cur_uvar(&s[S_META]);
    cursor qual = cur_take(&s[S_QUAL], cur_uvar(&s[S_META]));
    cursor tab = cur_take(&s[S_TABLE], cur_uvar(&s[S_META]));
    uint64_t nruns = cur_uvar(&s[S_META]);
    if (s[S_META].bad || s[S_QUAL].bad || s[S_TABLE].bad ||
        fidx >= vf->nfiles || first < INT32_MIN || first > INT32_MAX ||
        nunits > UINT32_MAX || nruns > nunits) {
        return -1;
    }
    char file[VEC_MAX_PATH];
    snprintf(file, sizeof file, "%.*s", (int)vf->names[fidx].len,
             (const char *)vf->names[fidx].p);

    fpi_linetable_iter it;
    fpi_linetable_entry e;
    int have = 0, rc = 0;
    fpi_linetable_iter_init(&it, tab.p, tab.len, (int32_t)first);
    int64_t prev_line = first;
    uint64_t unit = 0;
    for (uint64_t k = 0; k < nruns; k++) {
        vec_run r;
        r.count = cur_uvar(&s[S_COUNT]);
        r.line = prev_line + cur_svar(&s[S_DLINE]);
        r.end_line = r.line + cur_svar(&s[S_DEND]);
        r.col = cur_svar(&s[S_COL]);
        r.end_col = r.col + cur_svar(&s[S_DENDCOL]);
        prev_line = r.line;
        for (unsigned i = S_COUNT; i <= S_DENDCOL; i++) {
            if (s[i].bad) {
                return -1;
            }
        }
        if (r.count == 0 || r.count > nunits - unit) {
            return -1;
        }
        if (!compare) {
            unit += r.count;
            continue;
        }
        if (tab.len <= VEC_LOOKUP_TABLE_MAX) {
            fpi_position lp = {NONE, NONE, NONE, NONE};
            int lrc = fpi_linetable_lookup(tab.p, tab.len, (int32_t)first,
                                          (uint32_t)unit, &lp);
            if (lrc != 0 || !same_pos(&lp, &r)) {
                report(ck, "lookup", &qual, file, unit, &r, &lp, lrc);
            }
        }
        for (uint64_t j = 0; j < r.count; j++, unit++) {
            while (rc >= 0 && (!have || unit >= (uint64_t)e.start + e.length)) {
                rc = fpi_linetable_next(&it, &e);
                have = rc == 1;
                if (rc <= 0) {
                    break;
                }
            }
            fpi_position p = {NONE, NONE, NONE, NONE};
            if (have) {
                p = e.pos;
            }
            if (rc < 0 || !same_pos(&p, &r)) {
                report(ck, "iter", &qual, file, unit, &r, &p, rc);
            }
        }
    }
    if (unit != nunits) {
        return -1;
    }
    if (compare) {
        ck->records++;
        ck->units += unit;
    }
    return 0;
}

/* Checks all records of vf, or (select != NULL) those the (skip, take)
 * ranges in *select pick.  Returns -1 if a file is malformed. */
static int vec_check_file(vec_file *vf, vec_file *select, vec_check *ck)
{
    uint64_t skip = 0, take = 0, left = select ? select->nranges : 0;
    for (uint64_t rec = 0; rec < vf->ncode; rec++) {
        int compare = 1;
        if (select) {
            while (skip == 0 && take == 0 && left > 0) {
                skip = cur_uvar(&select->ranges);
                take = cur_uvar(&select->ranges);
                left--;
            }
            if (skip > 0) {
                skip--;
                compare = 0;
            } else if (take > 0) {
                take--;
            } else {
                compare = 0;
            }
        }
        if (vec_record(vf, compare, ck) < 0) {
            return -1;
        }
    }
    if (select && (skip || take || left || select->ranges.bad ||
                   select->ranges.pos != select->ranges.len)) {
        return -1; /* ranges run past the base's records */
    }
    for (unsigned i = 0; i < VEC_SECTIONS; i++) {
        if (vf->s[i].bad || vf->s[i].pos != vf->s[i].len) {
            return -1;
        }
    }
    return 0;
}

void test_vectors(void **state)
{
    vec_case *vc = *state;
    char path[VEC_MAX_PATH], err[VEC_MAX_PATH + 128];
    vec_file vf, base;
    vec_check ck = {vc, 0, 0, 0, 0};
    memset(&base, 0, sizeof base);
    if (vector_path(vc->corpus, vc->id, path, sizeof path) != 0) {
        fail_msg("%s: no vector file", vc->id);
    }
    if (vec_file_load(path, &vf, err, sizeof err) != 0) {
        vec_file_free(&vf);
        fail_msg("%s: %s", vc->id, err);
    }
    int bad = 0;
    if (vf.base.len > 0) {
        char id[VEC_MAX_ID_LEN] = {0}, bpath[VEC_MAX_PATH];
        if (vf.base.len < sizeof id) {
            memcpy(id, vf.base.p, vf.base.len);
        }
        int n = snprintf(bpath, sizeof bpath, "%s/%s/%s", vc->corpus, id,
                         VEC_FILE_NAME);
        if (!valid_id(id) || n < 0 || (size_t)n >= sizeof bpath) {
            snprintf(err, sizeof err, "bad base id in %s", path);
            bad = 1;
        } else if (vec_file_load(bpath, &base, err, sizeof err) != 0) {
            bad = 1;
        } else if (base.base.len > 0) {
            snprintf(err, sizeof err, "base %s has a base itself", bpath);
            bad = 1;
        } else if (vec_check_file(&base, &vf, &ck) != 0) {
            snprintf(err, sizeof err, "malformed base %s", bpath);
            bad = 1;
        }
    }
    if (!bad && vec_check_file(&vf, NULL, &ck) != 0) {
        snprintf(err, sizeof err, "malformed vector file %s", path);
        bad = 1;
    }
    vec_file_free(&base);
    vec_file_free(&vf);
    printf("# %s: %llu code objects, %llu code units checked\n", vc->id,
           (unsigned long long)ck.records, (unsigned long long)ck.units);
    if (!bad) {
        vc->totals->interpreters++;
        vc->totals->code_objects += ck.records;
        vc->totals->units += ck.units;
    }
    if (bad) {
        fail_msg("%s: %s", vc->id, err);
    }
    if (ck.mismatches) {
        fail_msg("%s: %llu code units differ from co_positions()", vc->id,
                 (unsigned long long)ck.mismatches);
    }
}

void test_vectors_missing(void **state)
{
    const char *corpus = *state;
    fail_msg("no linetable vector directories found in %s", corpus);
}

static int cmp_ids(const void *a, const void *b)
{
    return strcmp(((const vec_case *)a)->id, ((const vec_case *)b)->id);
}

/* Lists <corpus>/<id>/ directories; returns the count or -1. */
int list_ids(const char *corpus, vec_case *cases, size_t cap,
                    vec_totals *totals)
{
    DIR *d = opendir(corpus);
    if (!d) {
        return 0;
    }
    size_t n = 0;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d)) != NULL) {
        char p[VEC_MAX_PATH];
        struct stat st;
        if (!valid_id(de->d_name)) {
            continue;
        }
        int len = snprintf(p, sizeof p, "%s/%s", corpus, de->d_name);
        if (len < 0 || (size_t)len >= sizeof p || stat(p, &st) != 0 ||
            !S_ISDIR(st.st_mode)) {
            continue;
        }
        if (n == cap) {
            rc = -1;
            break;
        }
        vec_case *vc = &cases[n];
        size_t idlen = strlen(de->d_name); /* < VEC_MAX_ID_LEN: valid_id() */
        size_t clen = strlen(corpus);
        if (clen >= sizeof vc->corpus) {
            continue;
        }
        memcpy(vc->id, de->d_name, idlen + 1);
        memcpy(vc->name, "vectors/", sizeof "vectors/");
        memcpy(vc->name + sizeof "vectors/" - 1, de->d_name, idlen + 1);
        memcpy(vc->corpus, corpus, clen + 1);
        vc->totals = totals;
        n++;
    }
    closedir(d);
    if (rc < 0) {
        return rc;
    }
    qsort(cases, n, sizeof *cases, cmp_ids);
    return (int)n;
}
