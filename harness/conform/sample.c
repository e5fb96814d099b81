/* sample.c — the harness-owned sample: growth, string storage, lookup by
 * thread id, field names and the --inject-fault faults (see sample.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "sample.h"

#define STRBLOCK_MIN 65536u   /* bytes of one string block */
#define FIRST_CAPACITY 16u

struct cf_strblock {
    cf_strblock *next;
    size_t used, cap;
    char data[];
};

static const char *const FIELD_NAMES[CF_FIELD_COUNT] = {
    "function", "name", "file", "line", "end_line", "column", "end_column", "kind",
    "native_id", "thread_id", "main", "exception", "all_threads",
};

const char *cf_field_name(unsigned bit)
{
    for (unsigned i = 0; i < CF_FIELD_COUNT; i++)
        if (bit == 1u << i)
            return FIELD_NAMES[i];
    return NULL;
}

int cf_fields_parse(const char *list, unsigned *mask, char *bad, size_t badlen)
{
    unsigned m = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        unsigned i = 0;
        while (i < CF_FIELD_COUNT && !(strlen(FIELD_NAMES[i]) == n && memcmp(FIELD_NAMES[i], p, n) == 0))
            i++;
        if (i == CF_FIELD_COUNT) {
            if (bad && badlen)
                snprintf(bad, badlen, "%.*s", (int)n, p);
            return -1;
        }
        m |= 1u << i;
        p += n;
        if (*p == ',')
            p++;
    }
    *mask = m;
    return 0;
}

void cf_sample_init(cf_sample *s)
{
    memset(s, 0, sizeof *s);
}

void cf_sample_free(cf_sample *s)
{
    cf_strblock *b = s->strings;
    while (b) {
        cf_strblock *n = b->next;
        free(b);
        b = n;
    }
    free(s->threads);
    free(s->frames);
    cf_sample_init(s);
}

void cf_sample_reset(cf_sample *s, unsigned fields)
{
    s->fields = fields;
    s->nthreads = s->nframes = 0;
    /* Keep the newest block only. */
    if (s->strings) {
        cf_strblock *b = s->strings->next;
        while (b) {
            cf_strblock *n = b->next;
            free(b);
            b = n;
        }
        s->strings->next = NULL;
        s->strings->used = 0;
    }
}

static int reserve(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return CF_OK;
    size_t n = *cap ? *cap : FIRST_CAPACITY;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return CF_E_NOMEM;
        n *= 2;
    }
    if (n > SIZE_MAX / elem)
        return CF_E_NOMEM;
    void *q = realloc(*p, n * elem);
    if (!q)
        return CF_E_NOMEM;
    *p = q;
    *cap = n;
    return CF_OK;
}

int cf_sample_add_thread(cf_sample *s, const cf_thread *proto, cf_thread **out)
{
    if (reserve((void **)&s->threads, &s->cap_threads, s->nthreads + 1, sizeof *s->threads))
        return CF_E_NOMEM;
    cf_thread *t = &s->threads[s->nthreads++];
    *t = *proto;
    t->first = s->nframes;
    t->count = 0;
    if (out)
        *out = t;
    return CF_OK;
}

int cf_sample_add_frame(cf_sample *s, const cf_frame *f)
{
    if (s->nthreads == 0)
        return CF_E_FORMAT;
    if (reserve((void **)&s->frames, &s->cap_frames, s->nframes + 1, sizeof *s->frames))
        return CF_E_NOMEM;
    s->frames[s->nframes++] = *f;
    s->threads[s->nthreads - 1].count++;
    return CF_OK;
}

const char *cf_sample_intern(cf_sample *s, const char *str, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    cf_strblock *b = s->strings;
    if (!b || b->cap - b->used < n + 1) {
        size_t cap = n + 1 > STRBLOCK_MIN ? n + 1 : STRBLOCK_MIN;
        cf_strblock *nb = malloc(sizeof *nb + cap);
        if (!nb)
            return NULL;
        nb->next = b;
        nb->used = 0;
        nb->cap = cap;
        s->strings = b = nb;
    }
    char *d = b->data + b->used;
    memcpy(d, str, n);
    d[n] = '\0';
    b->used += n + 1;
    return d;
}

static const char *keep(cf_sample *s, const char *str)
{
    return str ? cf_sample_intern(s, str, strlen(str)) : NULL;
}

int cf_sample_copy(cf_sample *dst, const cf_sample *src)
{
    cf_sample_reset(dst, src->fields);
    for (size_t i = 0; i < src->nthreads; i++) {
        const cf_thread *t = &src->threads[i];
        cf_thread proto = *t, *nt;
        proto.error = keep(dst, t->error);
        if ((t->error && !proto.error) || cf_sample_add_thread(dst, &proto, &nt))
            return CF_E_NOMEM;
        for (size_t k = 0; k < t->count; k++) {
            cf_frame f = src->frames[t->first + k];
            f.function = keep(dst, f.function);
            f.name = keep(dst, f.name);
            f.file = keep(dst, f.file);
            if (!f.function || !f.name || !f.file || cf_sample_add_frame(dst, &f))
                return CF_E_NOMEM;
        }
    }
    return CF_OK;
}

const cf_thread *cf_sample_find(const cf_sample *s, uint64_t id)
{
    bool by_native = (s->fields & CF_FIELD_NATIVE_ID) != 0;
    const cf_thread *best = NULL;
    for (size_t i = 0; i < s->nthreads; i++) {
        const cf_thread *t = &s->threads[i];
        uint64_t tid = by_native ? t->native_id : t->thread_id;
        if (tid == id && (!best || t->interp_id < best->interp_id))
            best = t;
    }
    return best;
}

void cf_sample_inject(cf_sample *s, int fault, uint64_t id)
{
    const cf_thread *found = cf_sample_find(s, id);
    if (!found || found->count == 0)
        return;
    cf_thread *t = &s->threads[found - s->threads];
    if (fault == CF_FAULT_DROP_FRAME) {
        t->first++;
        t->count--;
    } else if (fault == CF_FAULT_SHIFT_LINE && s->frames[t->first].line != CF_POS_NONE) {
        s->frames[t->first].line++;
    }
}

bool cf_fault_is_live(int fault)
{
    return fault == CF_FAULT_SPLICE_PREVIOUS || fault == CF_FAULT_CACHE_BY_ADDRESS;
}
