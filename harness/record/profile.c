/* profile.c — the profile of a `frameproof record` run: threads, interned
 * frames and stacks, and each thread's (time, stack) samples.  Frames and
 * stacks are found again through open-addressing hash tables of indices,
 * so a sample costs a few lookups per frame and allocates only when
 * something new is seen or an array grows. */
#include <stdlib.h>
#include <string.h>

#include "profile.h"

#define FIRST_TABLE_SLOTS 1024u   /* hash slots at the start; a power of two, doubled at half load */
#define FIRST_ARRAY 256u          /* entries of a growing array at its first allocation */
#define EMPTY_SLOT UINT32_MAX
#define MAX_ENTRIES (UINT32_MAX / 4u) /* frames or stacks: indices stay below EMPTY_SLOT with room to double */
#define FNV_OFFSET 14695981039346656037ull
#define FNV_PRIME 1099511628211ull
#define HINT_SLOTS 4096u             /* direct-mapped hints from (code address, line) to a frame; a power of two */
#define HINT_MIX 0x9e3779b97f4a7c15ull /* Fibonacci hashing of the code address */

typedef struct table {
    uint32_t *slots;
    uint32_t cap;  /* power of two */
    uint32_t used;
} table;

struct fpr_profile {
    int mode;
    fpr_namer namer;
    void *namer_ctx;
    fpr_frame *frames;
    size_t nframes, frames_cap;
    fpr_stack *stacks;
    size_t nstacks, stacks_cap;
    fpr_thread *threads;
    size_t nthreads, threads_cap;
    table frame_index, stack_index;
    /* The frame last interned for each (code object address, line): a hint
     * checked by comparing the strings, since a freed code object's
     * address can come back with another function. */
    struct code_hint {
        uint64_t code_addr;
        int32_t line;
        uint32_t frame;
    } hints[HINT_SLOTS];
    uint32_t max_depth;
    uint64_t points;
    fpr_dropped dropped;
};

int fpr_mode_parse(const char *s)
{
    if (strcmp(s, "wall") == 0)
        return FPR_MODE_WALL;
    if (strcmp(s, "cpu") == 0)
        return FPR_MODE_CPU;
    if (strcmp(s, "gil") == 0)
        return FPR_MODE_GIL;
    return -1;
}

const char *fpr_mode_name(int mode)
{
    switch (mode) {
    case FPR_MODE_WALL: return "wall";
    case FPR_MODE_CPU: return "cpu";
    case FPR_MODE_GIL: return "gil";
    default: return "?";
    }
}

/* Makes room for n + 1 elements of size sz in *arr (capacity *cap). */
static int grow(void *arr, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return FP_OK;
    size_t ncap = *cap ? *cap * 2 : FIRST_ARRAY;
    void *p = realloc(*(void **)arr, ncap * sz);
    if (!p)
        return FP_E_NOMEM;
    *(void **)arr = p;
    *cap = ncap;
    return FP_OK;
}

static uint64_t hash_bytes(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * FNV_PRIME;
    return h;
}

static uint64_t frame_hash(const char *function, const char *file, int32_t line)
{
    uint64_t h = hash_bytes(FNV_OFFSET, function, strlen(function) + 1);
    h = hash_bytes(h, file, strlen(file) + 1);
    return hash_bytes(h, &line, sizeof line);
}

static uint64_t stack_hash(uint32_t parent, uint32_t frame)
{
    uint64_t h = hash_bytes(FNV_OFFSET, &parent, sizeof parent);
    return hash_bytes(h, &frame, sizeof frame);
}

static int table_init(table *t)
{
    t->slots = malloc(FIRST_TABLE_SLOTS * sizeof *t->slots);
    if (!t->slots)
        return FP_E_NOMEM;
    memset(t->slots, 0xff, FIRST_TABLE_SLOTS * sizeof *t->slots);
    t->cap = FIRST_TABLE_SLOTS;
    t->used = 0;
    return FP_OK;
}

static uint64_t entry_hash(const fpr_profile *p, const table *t, uint32_t idx)
{
    if (t == &p->frame_index) {
        const fpr_frame *f = &p->frames[idx];
        return frame_hash(f->function, f->file, f->line);
    }
    return stack_hash(p->stacks[idx].parent, p->stacks[idx].frame);
}

/* Doubles t when it is half full, re-placing every index. */
static int table_reserve(fpr_profile *p, table *t)
{
    if (t->used + 1 <= t->cap / 2)
        return FP_OK;
    uint32_t ncap = t->cap * 2;
    uint32_t *ns = malloc((size_t)ncap * sizeof *ns);
    if (!ns)
        return FP_E_NOMEM;
    memset(ns, 0xff, (size_t)ncap * sizeof *ns);
    for (uint32_t i = 0; i < t->cap; i++) {
        if (t->slots[i] == EMPTY_SLOT)
            continue;
        uint32_t at = (uint32_t)entry_hash(p, t, t->slots[i]) & (ncap - 1);
        while (ns[at] != EMPTY_SLOT)
            at = (at + 1) & (ncap - 1);
        ns[at] = t->slots[i];
    }
    free(t->slots);
    t->slots = ns;
    t->cap = ncap;
    return FP_OK;
}

int fpr_profile_new(int mode, fpr_namer namer, void *namer_ctx, fpr_profile **out)
{
    *out = NULL;
    fpr_profile *p = calloc(1, sizeof *p);
    if (!p)
        return FP_E_NOMEM;
    p->mode = mode;
    p->namer = namer;
    p->namer_ctx = namer_ctx;
    if (table_init(&p->frame_index) || table_init(&p->stack_index)) {
        fpr_profile_free(p);
        return FP_E_NOMEM;
    }
    *out = p;
    return FP_OK;
}

void fpr_profile_free(fpr_profile *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nframes; i++) {
        free(p->frames[i].function);
        free(p->frames[i].file);
    }
    for (size_t i = 0; i < p->nthreads; i++)
        free(p->threads[i].points);
    free(p->frames);
    free(p->stacks);
    free(p->threads);
    free(p->frame_index.slots);
    free(p->stack_index.slots);
    free(p);
}

static int lookup_frame(fpr_profile *p, const char *function, const char *file, int32_t line, uint32_t *out);

static struct code_hint *hint_slot(fpr_profile *p, const fp_frame *f)
{
    uint64_t h = (f->code_addr ^ (uint64_t)(uint32_t)f->line * FNV_PRIME) * HINT_MIX;
    return &p->hints[h >> 52 & (HINT_SLOTS - 1)];
}

/* The index of frame f, interned on first sight. */
static int intern_frame(fpr_profile *p, const fp_frame *f, uint32_t *out)
{
    const char *function = f->function ? f->function : "";
    const char *file = f->file ? f->file : "";
    struct code_hint *hint = hint_slot(p, f);
    if (hint->code_addr == f->code_addr && hint->line == f->line && hint->frame < p->nframes) {
        const fpr_frame *g = &p->frames[hint->frame];
        if (g->line == f->line && strcmp(g->function, function) == 0 && strcmp(g->file, file) == 0) {
            *out = hint->frame;
            return FP_OK;
        }
    }
    int rc = lookup_frame(p, function, file, f->line, out);
    if (rc == FP_OK)
        *hint = (struct code_hint){.code_addr = f->code_addr, .line = f->line, .frame = *out};
    return rc;
}

/* The index of (function, file, line), interned on first sight. */
static int lookup_frame(fpr_profile *p, const char *function, const char *file, int32_t line, uint32_t *out)
{
    int rc = table_reserve(p, &p->frame_index);
    if (rc)
        return rc;
    table *t = &p->frame_index;
    uint32_t at = (uint32_t)frame_hash(function, file, line) & (t->cap - 1);
    for (; t->slots[at] != EMPTY_SLOT; at = (at + 1) & (t->cap - 1)) {
        const fpr_frame *g = &p->frames[t->slots[at]];
        if (g->line == line && strcmp(g->function, function) == 0 && strcmp(g->file, file) == 0) {
            *out = t->slots[at];
            return FP_OK;
        }
    }
    if (p->nframes >= MAX_ENTRIES || grow(&p->frames, &p->frames_cap, p->nframes, sizeof *p->frames))
        return FP_E_NOMEM;
    char *fn = strdup(function), *fl = strdup(file);
    if (!fn || !fl) {
        free(fn);
        free(fl);
        return FP_E_NOMEM;
    }
    p->frames[p->nframes] = (fpr_frame){.function = fn, .file = fl, .line = line};
    t->slots[at] = (uint32_t)p->nframes;
    t->used++;
    *out = (uint32_t)p->nframes++;
    return FP_OK;
}

/* The index of the stack (parent, frame), interned on first sight. */
static int intern_stack(fpr_profile *p, uint32_t parent, uint32_t frame, uint32_t *out)
{
    int rc = table_reserve(p, &p->stack_index);
    if (rc)
        return rc;
    table *t = &p->stack_index;
    uint32_t at = (uint32_t)stack_hash(parent, frame) & (t->cap - 1);
    for (; t->slots[at] != EMPTY_SLOT; at = (at + 1) & (t->cap - 1)) {
        const fpr_stack *s = &p->stacks[t->slots[at]];
        if (s->parent == parent && s->frame == frame) {
            *out = t->slots[at];
            return FP_OK;
        }
    }
    if (p->nstacks >= MAX_ENTRIES || grow(&p->stacks, &p->stacks_cap, p->nstacks, sizeof *p->stacks))
        return FP_E_NOMEM;
    uint32_t depth = parent == FPR_NO_STACK ? 1 : p->stacks[parent].depth + 1;
    p->stacks[p->nstacks] = (fpr_stack){.parent = parent, .frame = frame, .depth = depth};
    if (depth > p->max_depth)
        p->max_depth = depth;
    t->slots[at] = (uint32_t)p->nstacks;
    t->used++;
    *out = (uint32_t)p->nstacks++;
    return FP_OK;
}

/* The profile's thread for th, added (and named) on first sight. */
static int find_thread(fpr_profile *p, const fp_thread *th, fpr_thread **out)
{
    for (size_t i = 0; i < p->nthreads; i++)
        if (p->threads[i].native_id == th->native_id && p->threads[i].interp_id == th->interp_id) {
            *out = &p->threads[i];
            return FP_OK;
        }
    if (grow(&p->threads, &p->threads_cap, p->nthreads, sizeof *p->threads))
        return FP_E_NOMEM;
    fpr_thread *t = &p->threads[p->nthreads];
    memset(t, 0, sizeof *t);
    t->native_id = th->native_id;
    t->interp_id = th->interp_id;
    t->main = th->main;
    if (p->namer)
        p->namer(p->namer_ctx, th->native_id, t->name, sizeof t->name);
    t->name[sizeof t->name - 1] = '\0';
    p->nthreads++;
    *out = t;
    return FP_OK;
}

/* Whether the mode keeps thread th; counts what it leaves out. */
static bool mode_keeps(fpr_profile *p, const fp_thread *th)
{
    int state = p->mode == FPR_MODE_CPU ? th->on_cpu : p->mode == FPR_MODE_GIL ? th->holds_gil : FP_YES;
    if (state == FP_YES)
        return true;
    p->dropped.mode_threads++;
    if (state == FP_UNKNOWN)
        p->dropped.unknown_state++;
    return false;
}

/* Interns the stack frames[0..n) (innermost first); *out is its innermost
 * entry. */
static int intern_thread_stack(fpr_profile *p, const fp_frame *frames, size_t n, uint32_t *out)
{
    uint32_t parent = FPR_NO_STACK;
    for (size_t k = n; k-- > 0;) {
        uint32_t frame;
        int rc = intern_frame(p, &frames[k], &frame);
        if (rc == FP_OK)
            rc = intern_stack(p, parent, frame, &parent);
        if (rc)
            return rc;
    }
    *out = parent;
    return FP_OK;
}

int fpr_profile_add_thread(fpr_profile *p, const fp_thread *th, const fp_frame *frames, int64_t t_ns)
{
    if (th->error == FP_E_LIMIT) {
        p->dropped.deep_threads++;
        return FP_OK;
    }
    if (th->error) {
        p->dropped.torn_threads++;
        return FP_OK;
    }
    if (th->frame_count == 0) {
        p->dropped.idle_threads++;
        return FP_OK;
    }
    if (!mode_keeps(p, th))
        return FP_OK;
    fpr_thread *t;
    uint32_t stack;
    int rc = find_thread(p, th, &t);
    if (rc == FP_OK)
        rc = intern_thread_stack(p, frames, th->frame_count, &stack);
    if (rc == FP_OK && grow(&t->points, &t->cap, t->count, sizeof *t->points))
        rc = FP_E_NOMEM;
    if (rc)
        return rc;
    t->points[t->count++] = (fpr_point){.t_ns = t_ns, .stack = stack};
    p->points++;
    return FP_OK;
}

int fpr_profile_add(fpr_profile *p, const fp_sample *sm, int64_t t_ns)
{
    size_t n = fp_sample_get_thread_count(sm);
    for (size_t i = 0; i < n; i++) {
        const fp_thread *th = fp_sample_get_thread(sm, i);
        /* A thread's frames are consecutive in the sample, innermost first. */
        int rc = fpr_profile_add_thread(p, th, th->frame_count ? fp_sample_get_frame(sm, th->first_frame) : NULL, t_ns);
        if (rc)
            return rc;
    }
    return FP_OK;
}

int fpr_profile_mode(const fpr_profile *p) { return p->mode; }
size_t fpr_profile_thread_count(const fpr_profile *p) { return p->nthreads; }
const fpr_thread *fpr_profile_thread(const fpr_profile *p, size_t i) { return &p->threads[i]; }
size_t fpr_profile_frame_count(const fpr_profile *p) { return p->nframes; }
const fpr_frame *fpr_profile_frame(const fpr_profile *p, uint32_t i) { return &p->frames[i]; }
size_t fpr_profile_stack_count(const fpr_profile *p) { return p->nstacks; }
const fpr_stack *fpr_profile_stack(const fpr_profile *p, uint32_t i) { return &p->stacks[i]; }
uint64_t fpr_profile_points(const fpr_profile *p) { return p->points; }
const fpr_dropped *fpr_profile_dropped(const fpr_profile *p) { return &p->dropped; }
uint32_t fpr_profile_max_depth(const fpr_profile *p) { return p->max_depth; }

uint32_t fpr_profile_unfold(const fpr_profile *p, uint32_t i, uint32_t *out)
{
    uint32_t depth = p->stacks[i].depth;
    for (uint32_t k = depth; k-- > 0; i = p->stacks[i].parent)
        out[k] = p->stacks[i].frame;
    return depth;
}
