/* mojo.c — decoding austin's MOJO binary stream into stacks and frames
 * (see mojo.h), every byte checked. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "mojo.h"

#define FIRST_CAPACITY 16u
#define MAP_FIRST_SLOTS 64u
#define MOJO_TID_MAX_DIGITS 16u      /* hex digits of a 64-bit thread id */
#define VARINT_FIRST_BITS 6u
#define VARINT_NEXT_BITS 7u
#define VARINT_MORE 0x80u
#define VARINT_NEGATIVE 0x40u
#define VARINT_FIRST_MASK 0x3fu
#define VARINT_NEXT_MASK 0x7fu

static const char *const EVENT_NAMES[MOJO_EV_COUNT] = {
    "RESERVED", "METADATA", "STACK", "FRAME", "FRAME_INVALID", "FRAME_REF", "FRAME_KERNEL",
    "GC", "IDLE", "METRIC_TIME", "METRIC_MEMORY", "STRING", "STRING_REF",
};

const char *mojo_event_name(unsigned code)
{
    return code < MOJO_EV_COUNT ? EVENT_NAMES[code] : "unknown";
}

/* --- a map from 64-bit keys to indexes (open addressing, no removal) ----------- */

typedef struct map_slot {
    uint64_t key;
    size_t value_plus1;      /* 0: empty */
} map_slot;

struct mojo_map {
    map_slot *slots;
    size_t nslots, used;
};

static size_t map_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k;
}

static map_slot *map_slot_of(const mojo_map *m, uint64_t key)
{
    size_t i = map_hash(key) & (m->nslots - 1);
    while (m->slots[i].value_plus1 && m->slots[i].key != key)
        i = (i + 1) & (m->nslots - 1);
    return &m->slots[i];
}

/* Index stored for key, or false. */
static bool map_get(const mojo_map *m, uint64_t key, size_t *value)
{
    if (!m || !m->nslots)
        return false;
    const map_slot *s = map_slot_of(m, key);
    if (!s->value_plus1)
        return false;
    *value = s->value_plus1 - 1;
    return true;
}

static int map_put(mojo_map **mp, uint64_t key, size_t value)
{
    mojo_map *m = *mp;
    if (!m) {
        m = calloc(1, sizeof *m);
        if (!m)
            return CF_E_NOMEM;
        *mp = m;
    }
    if (2 * (m->used + 1) > m->nslots) {
        size_t n = m->nslots ? 2 * m->nslots : MAP_FIRST_SLOTS;
        map_slot *fresh = calloc(n, sizeof *fresh);
        if (!fresh)
            return CF_E_NOMEM;
        mojo_map grown = {fresh, n, 0};
        for (size_t i = 0; i < m->nslots; i++)
            if (m->slots[i].value_plus1) {
                *map_slot_of(&grown, m->slots[i].key) = m->slots[i];
                grown.used++;
            }
        free(m->slots);
        *m = grown;
    }
    map_slot *s = map_slot_of(m, key);
    if (!s->value_plus1)
        m->used++;
    s->key = key;
    s->value_plus1 = value + 1;
    return CF_OK;
}

static void map_free(mojo_map *m)
{
    if (m)
        free(m->slots);
    free(m);
}

/* --- stream storage ------------------------------------------------------------- */

void mojo_stream_init(mojo_stream *s)
{
    memset(s, 0, sizeof *s);
}

void mojo_stream_free(mojo_stream *s)
{
    for (size_t i = 0; i < s->nowned; i++)
        free(s->owned[i]);
    free(s->owned);
    free(s->stacks);
    free(s->frames);
    free(s->meta);
    free(s->defs);
    map_free(s->string_keys);
    map_free(s->frame_keys);
    mojo_stream_init(s);
}

/* Makes room for one more element of size elem in *arr. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return CF_OK;
    if (n >= CF_MOJO_MAX_ITEMS)
        return CF_E_LIMIT;
    size_t c = *cap ? 2 * *cap : FIRST_CAPACITY;
    if (c > CF_MOJO_MAX_ITEMS)
        c = CF_MOJO_MAX_ITEMS;
    void *p = realloc(*arr, c * elem);
    if (!p)
        return CF_E_NOMEM;
    *arr = p;
    *cap = c;
    return CF_OK;
}

/* --- the decoder ------------------------------------------------------------------ */

typedef struct decoder {
    const unsigned char *buf;
    size_t len, pos;
    size_t event_at;         /* offset of the current event's code */
    unsigned event;          /* its code */
    mojo_stream *s;
    mojo_stack *open;        /* the stack frames go to, NULL before the first STACK */
    bool closed;             /* a metric ended the open stack */
    char *err;
    size_t errlen;
} decoder;

static int fail(decoder *d, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(decoder *d, int rc, const char *fmt, ...)
{
    if (d->err && d->errlen) {
        int n = snprintf(d->err, d->errlen, "MOJO offset %zu (%s event): ", d->event_at,
                         mojo_event_name(d->event));
        if (n >= 0 && (size_t)n < d->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(d->err + n, d->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return rc;
}

static int fail_storage(decoder *d, int rc)
{
    if (rc == CF_E_LIMIT)
        return fail(d, rc, "more than %u items", CF_MOJO_MAX_ITEMS);
    return fail(d, rc, "out of memory");
}

/* Reads a varint: magnitude in *v, sign in *neg. */
static int read_varint(decoder *d, const char *what, uint64_t *v, bool *neg)
{
    if (d->pos >= d->len)
        return fail(d, CF_E_FORMAT, "truncated: the stream ends before %s", what);
    size_t start = d->pos;
    unsigned b = d->buf[d->pos++];
    uint64_t value = b & VARINT_FIRST_MASK;
    *neg = (b & VARINT_NEGATIVE) != 0;
    unsigned shift = VARINT_FIRST_BITS;
    while (b & VARINT_MORE) {
        if (d->pos - start >= CF_MOJO_MAX_VARINT_BYTES)
            return fail(d, CF_E_FORMAT, "%s at offset %zu: varint longer than %u bytes", what, start,
                        CF_MOJO_MAX_VARINT_BYTES);
        if (d->pos >= d->len)
            return fail(d, CF_E_FORMAT, "truncated: the stream ends inside %s", what);
        b = d->buf[d->pos++];
        uint64_t part = b & VARINT_NEXT_MASK;
        if (part && (shift >= 64 || (part << shift) >> shift != part))
            return fail(d, CF_E_FORMAT, "%s at offset %zu: varint overflows 64 bits", what, start);
        if (shift < 64)
            value |= part << shift;
        shift += VARINT_NEXT_BITS;
    }
    *v = value;
    return CF_OK;
}

/* An unsigned field: a set sign bit is malformed. */
static int read_uint(decoder *d, const char *what, uint64_t *v)
{
    bool neg;
    int rc = read_varint(d, what, v, &neg);
    if (rc == CF_OK && neg)
        return fail(d, CF_E_FORMAT, "%s is negative", what);
    return rc;
}

/* A position field: austin writes C unsigned ints. */
static int read_u32(decoder *d, const char *what, uint32_t *v)
{
    uint64_t x;
    int rc = read_uint(d, what, &x);
    if (rc != CF_OK)
        return rc;
    if (x > UINT32_MAX)
        return fail(d, CF_E_FORMAT, "%s %" PRIu64 " does not fit 32 bits", what, x);
    *v = (uint32_t)x;
    return CF_OK;
}

/* A NUL-terminated string; *out points into the buffer, *n its length. */
static int read_cstr(decoder *d, const char *what, const char **out, size_t *n)
{
    size_t room = d->len - d->pos;
    size_t max = room < (size_t)CF_MOJO_MAX_STRING + 1 ? room : (size_t)CF_MOJO_MAX_STRING + 1;
    const unsigned char *z = memchr(d->buf + d->pos, 0, max);
    if (!z) {
        if (room > CF_MOJO_MAX_STRING)
            return fail(d, CF_E_LIMIT, "%s longer than %u bytes", what, CF_MOJO_MAX_STRING);
        return fail(d, CF_E_FORMAT, "truncated: %s has no terminating NUL", what);
    }
    *out = (const char *)d->buf + d->pos;
    *n = (size_t)(z - (d->buf + d->pos));
    d->pos += *n + 1;
    return CF_OK;
}

/* Copies a string into the stream's storage. */
static int own_string(decoder *d, const char *str, size_t n, const char **out, size_t *index)
{
    mojo_stream *s = d->s;
    int rc = grow((void **)&s->owned, &s->cap_owned, s->nowned, sizeof *s->owned);
    if (rc != CF_OK)
        return fail_storage(d, rc);
    char *copy = malloc(n + 1);
    if (!copy)
        return fail_storage(d, CF_E_NOMEM);
    memcpy(copy, str, n);
    copy[n] = '\0';
    s->owned[s->nowned] = copy;
    if (index)
        *index = s->nowned;
    s->nowned++;
    *out = copy;
    return CF_OK;
}

static int read_owned_string(decoder *d, const char *what, const char **out)
{
    const char *str = NULL;
    size_t n = 0;
    int rc = read_cstr(d, what, &str, &n);
    return rc != CF_OK ? rc : own_string(d, str, n, out, NULL);
}

/* A string reference: must name a STRING seen before. */
static int read_string_ref(decoder *d, const char *what, const char **out)
{
    uint64_t key;
    size_t index;
    int rc = read_uint(d, what, &key);
    if (rc != CF_OK)
        return rc;
    if (!map_get(d->s->string_keys, key, &index))
        return fail(d, CF_E_FORMAT, "%s refers to string %" PRIu64 ", which no STRING event defined", what,
                    key);
    *out = d->s->owned[index];
    return CF_OK;
}

/* The stack the next frame or metric belongs to. */
static int need_stack(decoder *d, bool for_frame)
{
    if (!d->open)
        return fail(d, CF_E_FORMAT, "outside any STACK");
    if (for_frame && d->closed)
        return fail(d, CF_E_FORMAT, "after the stack's metric (no STACK in between)");
    return CF_OK;
}

static int add_frame(decoder *d, const mojo_frame *f)
{
    mojo_stream *s = d->s;
    int rc = need_stack(d, true);
    if (rc != CF_OK)
        return rc;
    rc = grow((void **)&s->frames, &s->cap_frames, s->nframes, sizeof *s->frames);
    if (rc != CF_OK)
        return fail_storage(d, rc);
    s->frames[s->nframes++] = *f;
    d->open->count++;
    return CF_OK;
}

/* The thread id: 1 to 16 hex digits. */
static int parse_tid(decoder *d, const char *str, size_t n, uint64_t *tid)
{
    if (n == 0 || n > MOJO_TID_MAX_DIGITS)
        return fail(d, CF_E_FORMAT, "thread id '%.*s' is not 1 to %u hex digits", (int)(n < 40 ? n : 40), str,
                    MOJO_TID_MAX_DIGITS);
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char c = str[i];
        unsigned digit;
        if (c >= '0' && c <= '9')
            digit = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            digit = (unsigned)(c - 'a') + 10u;
        else if (c >= 'A' && c <= 'F')
            digit = (unsigned)(c - 'A') + 10u;
        else
            return fail(d, CF_E_FORMAT, "thread id '%.*s' is not hexadecimal", (int)(n < 40 ? n : 40), str);
        v = v << 4 | digit;
    }
    *tid = v;
    return CF_OK;
}

static int ev_stack(decoder *d)
{
    mojo_stream *s = d->s;
    mojo_stack st = {0};
    const char *tid = NULL;
    size_t n = 0;
    int rc;
    if ((rc = read_uint(d, "pid", &st.pid)) != CF_OK || (rc = read_uint(d, "interpreter id", &st.iid)) != CF_OK ||
        (rc = read_cstr(d, "thread id", &tid, &n)) != CF_OK || (rc = parse_tid(d, tid, n, &st.tid)) != CF_OK)
        return rc;
    rc = grow((void **)&s->stacks, &s->cap_stacks, s->nstacks, sizeof *s->stacks);
    if (rc != CF_OK)
        return fail_storage(d, rc);
    st.first = s->nframes;
    s->stacks[s->nstacks] = st;
    d->open = &s->stacks[s->nstacks++];
    d->closed = false;
    return CF_OK;
}

static int ev_frame(decoder *d)
{
    mojo_stream *s = d->s;
    mojo_frame f = {.kind = MOJO_FRAME_PYTHON};
    int rc;
    if ((rc = read_uint(d, "frame key", &f.key)) != CF_OK ||
        (rc = read_string_ref(d, "file name", &f.file)) != CF_OK ||
        (rc = read_string_ref(d, "scope", &f.scope)) != CF_OK || (rc = read_u32(d, "line", &f.line)) != CF_OK ||
        (rc = read_u32(d, "end line", &f.line_end)) != CF_OK || (rc = read_u32(d, "column", &f.column)) != CF_OK ||
        (rc = read_u32(d, "end column", &f.column_end)) != CF_OK)
        return rc;
    size_t index;
    if (map_get(s->frame_keys, f.key, &index)) {
        s->defs[index] = f;   /* austin may redefine a key its cache evicted */
        return CF_OK;
    }
    rc = grow((void **)&s->defs, &s->cap_defs, s->ndefs, sizeof *s->defs);
    if (rc == CF_OK)
        rc = map_put(&s->frame_keys, f.key, s->ndefs);
    if (rc != CF_OK)
        return fail_storage(d, rc);
    s->defs[s->ndefs++] = f;
    return CF_OK;
}

static int ev_frame_ref(decoder *d)
{
    uint64_t key;
    size_t index;
    int rc = read_uint(d, "frame key", &key);
    if (rc != CF_OK)
        return rc;
    if (!map_get(d->s->frame_keys, key, &index))
        return fail(d, CF_E_FORMAT, "frame %" PRIu64 " was not defined by a FRAME event", key);
    mojo_frame f = d->s->defs[index];
    return add_frame(d, &f);
}

static int ev_string(decoder *d)
{
    uint64_t key = 0;
    const char *str = NULL, *copy = NULL;
    size_t n = 0, index = 0;
    int rc = read_uint(d, "string key", &key);
    if (rc == CF_OK)
        rc = read_cstr(d, "string", &str, &n);
    if (rc == CF_OK)
        rc = own_string(d, str, n, &copy, &index);
    if (rc != CF_OK)
        return rc;
    rc = map_put(&d->s->string_keys, key, index);
    return rc == CF_OK ? CF_OK : fail_storage(d, rc);
}

static int ev_metadata(decoder *d)
{
    mojo_stream *s = d->s;
    mojo_meta m;
    int rc;
    if ((rc = read_owned_string(d, "metadata label", &m.label)) != CF_OK ||
        (rc = read_owned_string(d, "metadata value", &m.value)) != CF_OK)
        return rc;
    rc = grow((void **)&s->meta, &s->cap_meta, s->nmeta, sizeof *s->meta);
    if (rc != CF_OK)
        return fail_storage(d, rc);
    s->meta[s->nmeta++] = m;
    return CF_OK;
}

static int ev_metric(decoder *d, bool memory)
{
    uint64_t v;
    bool neg;
    int rc = need_stack(d, false);
    if (rc == CF_OK)
        rc = read_varint(d, memory ? "memory delta" : "time delta", &v, &neg);
    if (rc != CF_OK)
        return rc;
    if (memory) {
        if (v > (uint64_t)INT64_MAX)
            return fail(d, CF_E_FORMAT, "memory delta %" PRIu64 " does not fit 64 bits signed", v);
        d->open->has_memory = true;
        d->open->memory = neg ? -(int64_t)v : (int64_t)v;
    } else {
        if (neg)
            return fail(d, CF_E_FORMAT, "time delta is negative");
        d->open->has_time = true;
        d->open->time = v;
    }
    d->closed = true;
    return CF_OK;
}

static int decode_event(decoder *d)
{
    mojo_frame f = {0};
    uint64_t key;
    size_t ignored;
    int rc;
    switch (d->event) {
    case MOJO_EV_METADATA:
        return ev_metadata(d);
    case MOJO_EV_STACK:
        return ev_stack(d);
    case MOJO_EV_FRAME:
        return ev_frame(d);
    case MOJO_EV_FRAME_INVALID:
        f.kind = MOJO_FRAME_BROKEN;
        f.file = f.scope = "";
        if ((rc = add_frame(d, &f)) == CF_OK)
            d->open->broken++;
        return rc;
    case MOJO_EV_FRAME_REF:
        return ev_frame_ref(d);
    case MOJO_EV_FRAME_KERNEL:
        f.kind = MOJO_FRAME_KERNEL;
        f.file = "";
        if ((rc = read_owned_string(d, "kernel frame", &f.scope)) != CF_OK)
            return rc;
        return add_frame(d, &f);
    case MOJO_EV_GC:
    case MOJO_EV_IDLE:
        if ((rc = need_stack(d, false)) != CF_OK)
            return rc;
        if (d->event == MOJO_EV_GC)
            d->open->gc = true;
        else
            d->open->idle = true;
        return CF_OK;
    case MOJO_EV_METRIC_TIME:
        return ev_metric(d, false);
    case MOJO_EV_METRIC_MEMORY:
        return ev_metric(d, true);
    case MOJO_EV_STRING:
        return ev_string(d);
    case MOJO_EV_STRING_REF:
        /* Not written by austin 3.7; checked, then ignored. */
        if ((rc = read_uint(d, "string key", &key)) != CF_OK)
            return rc;
        if (!map_get(d->s->string_keys, key, &ignored))
            return fail(d, CF_E_FORMAT, "refers to string %" PRIu64 ", which no STRING event defined", key);
        return CF_OK;
    default:
        return fail(d, CF_E_FORMAT, "unknown event code %u", d->event);
    }
}

int mojo_decode(const unsigned char *buf, size_t len, mojo_stream *s, char *err, size_t errlen)
{
    decoder d = {.buf = buf, .len = len, .s = s, .err = err, .errlen = errlen, .event = MOJO_EV_RESERVED};
    const size_t magic = sizeof MOJO_MAGIC - 1;
    if (err && errlen)
        err[0] = '\0';
    if (len > CF_MOJO_MAX_BYTES) {
        snprintf(err, errlen, "MOJO stream of %zu bytes is longer than %u", len, CF_MOJO_MAX_BYTES);
        return CF_E_LIMIT;
    }
    if (len < magic || memcmp(buf, MOJO_MAGIC, magic) != 0) {
        snprintf(err, errlen, "not a MOJO stream: it does not start with \"%s\" (%zu bytes)", MOJO_MAGIC, len);
        return CF_E_FORMAT;
    }
    d.pos = magic;
    int rc = read_uint(&d, "the format version", &s->version);
    if (rc != CF_OK)
        return rc;
    if (s->version != MOJO_SUPPORTED_VERSION)
        return fail(&d, CF_E_FORMAT, "MOJO format version %" PRIu64 " (this decoder reads version %u)",
                    s->version, MOJO_SUPPORTED_VERSION);
    while (d.pos < d.len) {
        d.event_at = d.pos;
        d.event = d.buf[d.pos++];
        /* d.open points into s->stacks: only ev_stack grows it, and it
         * re-points d.open. */
        if ((rc = decode_event(&d)) != CF_OK)
            return rc;
    }
    return CF_OK;
}

const char *mojo_meta_get(const mojo_stream *s, const char *label)
{
    const char *v = NULL;
    for (size_t i = 0; i < s->nmeta; i++)
        if (strcmp(s->meta[i].label, label) == 0)
            v = s->meta[i].value;
    return v;
}

static bool same_thread(const mojo_stack *a, const mojo_stack *b)
{
    return a->pid == b->pid && a->iid == b->iid && a->tid == b->tid;
}

int mojo_first_pass(const mojo_stream *s, size_t *n)
{
    mojo_map *seen = NULL;
    int rc = CF_OK;
    size_t i;
    for (i = 0; i < s->nstacks; i++) {
        const mojo_stack *st = &s->stacks[i];
        uint64_t key = st->tid ^ map_hash(st->iid + 1) ^ (map_hash(st->pid) << 1);
        size_t j;
        if (map_get(seen, key, &j)) {
            if (same_thread(st, &s->stacks[j]))
                break;
            /* a collision of the mixed key: compare with every earlier stack */
            bool repeat = false;
            for (j = 0; j < i && !repeat; j++)
                repeat = same_thread(st, &s->stacks[j]);
            if (repeat)
                break;
        } else if ((rc = map_put(&seen, key, i)) != CF_OK) {
            break;
        }
    }
    map_free(seen);
    *n = i;
    return rc;
}
