/* fuzz_synth_unwind.c — structure-aware whole unwinds: the input is decoded
 * into a *description* of a CPython address space (layout, threads, frames,
 * code objects with names of every PEP 393 kind and arbitrary location
 * tables, generator and entry frames, thread-local bytecode), the synthetic
 * image builder of tests/synth lays it out with that layout's real offsets,
 * and the unwinder must return exactly the described stacks — twice (cold,
 * then with the code cache warm).
 *
 * Every input decodes to a valid description (bytes past the end read as
 * zero), so the oracle is exact equality: names, positions, instruction
 * offsets, frame kinds, frames hidden before their first traceable
 * instruction, thread ids and the main flag.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz_common.h"
#include "debug_offsets.h"
#include "frameproof/frameproof.h"
#include "layout.h"
#include "synth.h"
#include "tables/debug_offsets_tables.h"

#define MAX_THREADS 4
#define MAX_FRAMES 16
#define MAX_CODES 4
#define MAX_LOCS 12
#define MAX_UNITS_PER_LOC 8
#define MAX_FIRSTLINE 100000
#define LINE_STEP_RANGE 64
#define END_LINE_RANGE 4
#define MAX_NAMED_DEPTH 1024u

static const char *const LAYOUT_IDS[] = {"3.11", "3.12", "3.13", "3.13t", "3.14", "3.14t", "3.15", "3.15t"};
#define NLAYOUTS (sizeof LAYOUT_IDS / sizeof LAYOUT_IDS[0])

/* Names of every kind: ASCII, Latin-1, UCS-2, UCS-4, empty, long. */
static const char *const NAMES[] = {
    "f",
    "Outer.method",
    "caf\xc3\xa9.na\xc3\xafve",
    "\xe5\x87\xbd\xe6\x95\xb0.\xce\xa9mega",
    "\xf0\x9d\x94\xa3.<locals>.g",
    "<module>",
    "",
    "a_rather_long_function_name_that_goes_on_and_on_and_on_for_a_while_0123456789_abcdefghijklmnop",
};
#define NNAMES (sizeof NAMES / sizeof NAMES[0])

typedef struct cursor {
    const uint8_t *p;
    size_t n, pos;
} cursor;

static uint8_t next_byte(cursor *c)
{
    return c->pos < c->n ? c->p[c->pos++] : 0;
}

static uint16_t next_u16(cursor *c)
{
    uint16_t lo = next_byte(c);
    return (uint16_t)(lo | next_byte(c) << 8);
}

typedef struct description {
    synth_code codes[MAX_CODES];
    int code_units[MAX_CODES];
    size_t ncodes;
    synth_frame frames[MAX_THREADS][MAX_FRAMES];
    synth_thread threads[MAX_THREADS];
    synth_desc desc;
} description;

static void decode_code(cursor *c, synth_code *code, int *units_out)
{
    memset(code, 0, sizeof *code);
    code->qualname = NAMES[next_byte(c) % NNAMES];
    code->name = NAMES[next_byte(c) % NNAMES];
    code->filename = NAMES[next_byte(c) % NNAMES];
    code->firstlineno = 1 + next_u16(c) % MAX_FIRSTLINE;
    code->nlocs = 1 + next_byte(c) % MAX_LOCS;
    code->noncompact_names = next_byte(c) & 1;
    int line = code->firstlineno, units = 0;
    for (int i = 0; i < code->nlocs; i++) {
        synth_loc *e = &code->locs[i];
        uint8_t shape = next_byte(c);
        e->units = 1 + shape % MAX_UNITS_PER_LOC;
        units += e->units;
        if (shape & 0x80) {
            e->line = e->end_line = e->column = e->end_column = FP_POS_NONE;
            continue;
        }
        int step = (int)(next_byte(c) % LINE_STEP_RANGE) - LINE_STEP_RANGE / 2;
        if (line + step >= 1)
            line += step;
        e->line = line;
        e->end_line = line + next_byte(c) % END_LINE_RANGE;
        e->column = (int)next_byte(c) - 1;      /* -1 (absent) .. 254 */
        e->end_column = (int)next_byte(c) - 1;
    }
    code->firsttraceable = next_byte(c) % (units + 1);
    *units_out = units;
}

static bool has_table(const char *id)
{
    return strcmp(id, "3.11") != 0 && strcmp(id, "3.12") != 0;
}

static const uint8_t *find_table(const char *id)
{
    for (size_t i = 0; i < FUZZ_TABLE_COUNT; i++)
        if (strcmp(fuzz_tables[i].id, id) == 0)
            return fuzz_tables[i].bytes;
    return NULL;
}

/* The location entry covering `unit` of code c. */
static const synth_loc *loc_at(const synth_code *c, int unit)
{
    int start = 0;
    for (int i = 0; i < c->nlocs; i++) {
        if (unit < start + c->locs[i].units)
            return &c->locs[i];
        start += c->locs[i].units;
    }
    return NULL;
}

static void check_sample(const char *id, const description *d, const fp_sample *sm, int rc, const char *errmsg)
{
    FUZZ_CHECK(rc == FP_OK, "%s: sample failed (%d): %s", id, rc, errmsg);
    FUZZ_CHECK(fp_sample_interp_count(sm) == 1, "%s: %zu interpreters", id, fp_sample_interp_count(sm));
    FUZZ_CHECK(fp_sample_thread_count(sm) == d->desc.nthreads, "%s: %zu threads, described %zu", id,
               fp_sample_thread_count(sm), d->desc.nthreads);
    for (size_t t = 0; t < d->desc.nthreads; t++) {
        const synth_thread *st = &d->threads[t];
        const fp_thread *th = fp_sample_thread(sm, t);
        FUZZ_CHECK(th->native_id == st->native_id && th->thread_id == st->thread_id,
                   "%s: thread %zu ids %llu/%llx", id, t, (unsigned long long)th->native_id,
                   (unsigned long long)th->thread_id);
        FUZZ_CHECK(th->main == st->main, "%s: thread %zu main=%d", id, t, th->main);
        FUZZ_CHECK(th->error == 0, "%s: thread %zu error %d", id, t, th->error);
        size_t k = 0;
        for (size_t f = 0; f < st->nframes; f++) {
            const synth_frame *sf = &st->frames[f];
            const synth_code *c = sf->code;
            if (!sf->generator && sf->unit < c->firsttraceable)
                continue; /* not yet at its first traceable instruction: hidden */
            FUZZ_CHECK(k < th->frame_count, "%s: thread %zu has %zu frames, more described", id, t,
                       th->frame_count);
            const fp_frame *fr = fp_sample_frame(sm, th->first_frame + k);
            const synth_loc *loc = loc_at(c, sf->unit);
            FUZZ_CHECK(strcmp(fr->function, c->qualname) == 0 && strcmp(fr->name, c->name) == 0 &&
                           strcmp(fr->file, c->filename) == 0,
                       "%s: thread %zu frame %zu: %s/%s/%s, described %s/%s/%s", id, t, k, fr->function, fr->name,
                       fr->file, c->qualname, c->name, c->filename);
            FUZZ_CHECK(fr->line == loc->line && fr->end_line == loc->end_line && fr->column == loc->column &&
                           fr->end_column == loc->end_column,
                       "%s: thread %zu frame %zu: %d-%d:%d-%d, described %d-%d:%d-%d", id, t, k, fr->line,
                       fr->end_line, fr->column, fr->end_column, loc->line, loc->end_line, loc->column,
                       loc->end_column);
            FUZZ_CHECK(fr->instr_offset == sf->unit, "%s: thread %zu frame %zu: offset %d, described %d", id, t, k,
                       fr->instr_offset, sf->unit);
            FUZZ_CHECK(fr->kind == (sf->generator ? FP_FRAME_GENERATOR : FP_FRAME_PYTHON),
                       "%s: thread %zu frame %zu: kind %d", id, t, k, fr->kind);
            k++;
        }
        FUZZ_CHECK(k == th->frame_count, "%s: thread %zu has %zu frames, described %zu visible", id, t,
                   th->frame_count, k);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cursor c = {data, size, 0};
    const char *id = LAYOUT_IDS[next_byte(&c) % NLAYOUTS];
    uint8_t *table = NULL;
    description *d = calloc(1, sizeof *d);
    synth_image *img = NULL;
    fp_session *s = NULL;
    fp_sample *sm = NULL;
    if (!d)
        return 0;
    fpi_layout probe = *fpi_layout_builtin_311();
    if (has_table(id)) {
        const uint8_t *t = find_table(id);
        if (!t)
            goto out; /* table not generated for this build */
        table = calloc(1, FPI_DEBUG_OFFSETS_READ);
        if (!table)
            goto out;
        memcpy(table, t, FUZZ_TABLE_BYTES);
        if (fpi_debug_offsets_parse(table, FPI_DEBUG_OFFSETS_READ, &probe, NULL) != FP_OK)
            goto out;
    }
    bool tlbc = probe.co_tlbc != FPI_OFF_NONE;

    d->ncodes = 1 + next_byte(&c) % MAX_CODES;
    for (size_t i = 0; i < d->ncodes; i++)
        decode_code(&c, &d->codes[i], &d->code_units[i]);
    d->desc.nthreads = 1 + next_byte(&c) % MAX_THREADS;
    for (size_t t = 0; t < d->desc.nthreads; t++) {
        size_t nframes = next_byte(&c) % (MAX_FRAMES + 1);
        for (size_t f = 0; f < nframes; f++) {
            synth_frame *sf = &d->frames[t][f];
            uint8_t shape = next_byte(&c);
            size_t ci = shape % d->ncodes;
            sf->code = &d->codes[ci];
            sf->unit = next_u16(&c) % d->code_units[ci];
            /* 3.11 reports a thread whose outermost frame is a generator
             * as torn (walk.c): such a stack is not described there. */
            sf->generator = (shape >> 2) & 1 && !(strcmp(id, "3.11") == 0 && f + 1 == nframes);
            sf->entry_below = (shape >> 3) & 1;
            sf->tlbc_index = tlbc ? (shape >> 4) % SYNTH_MAX_TLBC : 0;
            /* A frame before its first traceable instruction has called
             * nothing yet (walk.c): its callee is entered from C code. */
            if (f > 0 && !sf->generator && sf->unit < sf->code->firsttraceable)
                d->frames[t][f - 1].entry_below = true;
        }
        d->threads[t] = (synth_thread){
            .native_id = 1000 + t,
            .thread_id = 0x7f0000001000ull + 0x1000ull * t,
            .main = t == 0,
            .frames = d->frames[t],
            .nframes = nframes,
        };
    }
    d->desc.threads = d->threads;

    char err[512];
    if (synth_build(id, table, FPI_DEBUG_OFFSETS_READ, &d->desc, &img, err, sizeof err) != 0)
        goto out; /* a description the builder cannot lay out */
    fp_options o;
    fp_options_init(&o);
    o.max_depth = MAX_NAMED_DEPTH;
    if (fp_session_new(&o, &s) || fp_sample_new(&sm))
        goto out;
    fp_reader rd;
    fp_target_desc td;
    synth_reader(img, &rd);
    synth_target(img, &td);
    int rc = fp_session_attach_reader(s, &rd, &td);
    FUZZ_CHECK(rc == FP_OK, "%s: attach failed: %s", id, fp_session_errmsg(s));
    for (int pass = 0; pass < 2; pass++) {
        rc = fp_session_sample(s, sm);
        FUZZ_CHECK_MESSAGE(rc, fp_session_errmsg(s));
        check_sample(id, d, sm, rc, fp_session_errmsg(s));
    }
out:
    fp_sample_free(sm);
    fp_session_free(s);
    synth_free(img);
    free(table);
    free(d);
    return 0;
}
