/* synth_input.c — fuzz input as a synthetic address-space description, and
 * the comparison of an unwound thread with a described stack (see
 * synth_input.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug_offsets.h"
#include "synth_input.h"
#include "tables/debug_offsets_tables.h"

#define MAX_LOCS 12
#define MAX_UNITS_PER_LOC 8
#define MAX_FIRSTLINE 100000
#define LINE_STEP_RANGE 64
#define END_LINE_RANGE 4

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

uint8_t fz_next_byte(fz_cursor *c)
{
    return c->pos < c->n ? c->p[c->pos++] : 0;
}

uint16_t fz_next_u16(fz_cursor *c)
{
    uint16_t lo = fz_next_byte(c);
    return (uint16_t)(lo | fz_next_byte(c) << 8);
}

const char *fz_next_name(fz_cursor *c)
{
    return NAMES[fz_next_byte(c) % NNAMES];
}

const char *fz_next_layout(fz_cursor *c)
{
    return LAYOUT_IDS[fz_next_byte(c) % NLAYOUTS];
}

static bool has_table(const char *id)
{
    return strcmp(id, "3.11") != 0 && strcmp(id, "3.12") != 0;
}

bool fz_layout_table(const char *id, uint8_t **table, fpi_layout *probe)
{
    *table = NULL;
    *probe = *fpi_layout_builtin_311();
    if (!has_table(id))
        return true;
    const uint8_t *t = NULL;
    for (size_t i = 0; i < FUZZ_TABLE_COUNT; i++)
        if (strcmp(fuzz_tables[i].id, id) == 0)
            t = fuzz_tables[i].bytes;
    if (!t)
        return false; /* table not generated for this build */
    uint8_t *copy = calloc(1, FPI_DEBUG_OFFSETS_READ);
    if (!copy)
        return false;
    memcpy(copy, t, FUZZ_TABLE_BYTES);
    if (fpi_debug_offsets_parse(copy, FPI_DEBUG_OFFSETS_READ, probe, NULL) != FP_OK) {
        free(copy);
        return false;
    }
    *table = copy;
    return true;
}

void fz_decode_code(fz_cursor *c, synth_code *code, int *units_out)
{
    memset(code, 0, sizeof *code);
    code->qualname = NAMES[fz_next_byte(c) % NNAMES];
    code->name = NAMES[fz_next_byte(c) % NNAMES];
    code->filename = NAMES[fz_next_byte(c) % NNAMES];
    code->firstlineno = 1 + fz_next_u16(c) % MAX_FIRSTLINE;
    code->nlocs = 1 + fz_next_byte(c) % MAX_LOCS;
    code->noncompact_names = fz_next_byte(c) & 1;
    int line = code->firstlineno, units = 0;
    for (int i = 0; i < code->nlocs; i++) {
        synth_loc *e = &code->locs[i];
        uint8_t shape = fz_next_byte(c);
        e->units = 1 + shape % MAX_UNITS_PER_LOC;
        units += e->units;
        if (shape & 0x80) {
            e->line = e->end_line = e->column = e->end_column = FP_POS_NONE;
            continue;
        }
        int step = (int)(fz_next_byte(c) % LINE_STEP_RANGE) - LINE_STEP_RANGE / 2;
        if (line + step >= 1)
            line += step;
        e->line = line;
        e->end_line = line + fz_next_byte(c) % END_LINE_RANGE;
        e->column = (int)fz_next_byte(c) - 1;      /* -1 (absent) .. 254 */
        e->end_column = (int)fz_next_byte(c) - 1;
    }
    code->firsttraceable = fz_next_byte(c) % (units + 1);
    *units_out = units;
}

void fz_decode_description(fz_cursor *c, const char *id, bool tlbc, fz_description *d)
{
    d->ncodes = 1 + fz_next_byte(c) % FZ_MAX_CODES;
    for (size_t i = 0; i < d->ncodes; i++)
        fz_decode_code(c, &d->codes[i], &d->code_units[i]);
    d->desc.nthreads = 1 + fz_next_byte(c) % FZ_MAX_THREADS;
    for (size_t t = 0; t < d->desc.nthreads; t++) {
        size_t nframes = fz_next_byte(c) % (FZ_MAX_FRAMES + 1);
        for (size_t f = 0; f < nframes; f++) {
            synth_frame *sf = &d->frames[t][f];
            uint8_t shape = fz_next_byte(c);
            size_t ci = shape % d->ncodes;
            sf->code = &d->codes[ci];
            sf->unit = fz_next_u16(c) % d->code_units[ci];
            /* 3.11 reports a thread whose outermost frame is a generator
             * as torn (chain.c): such a stack is not described there. */
            sf->generator = (shape >> 2) & 1 && !(strcmp(id, "3.11") == 0 && f + 1 == nframes);
            sf->entry_below = (shape >> 3) & 1;
            sf->tlbc_index = tlbc ? (shape >> 4) % SYNTH_MAX_TLBC : 0;
            /* A frame before its first traceable instruction has called
             * nothing yet (emit.c): its callee is entered from C code. */
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

bool fz_frame_equals(const fp_frame *fr, const synth_frame *sf, size_t k, char *msg, size_t msglen)
{
    const synth_code *c = sf->code;
    const synth_loc *loc = loc_at(c, sf->unit);
    if (strcmp(fr->function, c->qualname) != 0 || strcmp(fr->name, c->name) != 0 || strcmp(fr->file, c->filename) != 0) {
        snprintf(msg, msglen, "frame %zu: %s/%s/%s, described %s/%s/%s", k, fr->function, fr->name, fr->file,
                 c->qualname, c->name, c->filename);
        return false;
    }
    if (fr->line != loc->line || fr->end_line != loc->end_line || fr->column != loc->column ||
        fr->end_column != loc->end_column) {
        snprintf(msg, msglen, "frame %zu: %d-%d:%d-%d, described %d-%d:%d-%d", k, fr->line, fr->end_line,
                 fr->column, fr->end_column, loc->line, loc->end_line, loc->column, loc->end_column);
        return false;
    }
    if (fr->instr_offset != sf->unit) {
        snprintf(msg, msglen, "frame %zu: offset %d, described %d", k, fr->instr_offset, sf->unit);
        return false;
    }
    if (fr->kind != (sf->generator ? FP_FRAME_GENERATOR : FP_FRAME_PYTHON)) {
        snprintf(msg, msglen, "frame %zu: kind %d", k, fr->kind);
        return false;
    }
    return true;
}

bool fz_thread_equals(const fp_sample *sm, const fp_thread *th, const synth_frame *frames, size_t nframes,
                      char *msg, size_t msglen)
{
    size_t k = 0;
    for (size_t f = 0; f < nframes; f++) {
        const synth_frame *sf = &frames[f];
        if (!sf->generator && sf->unit < sf->code->firsttraceable)
            continue; /* not yet at its first traceable instruction: hidden */
        if (k >= th->frame_count) {
            snprintf(msg, msglen, "%zu frames, more described", th->frame_count);
            return false;
        }
        if (!fz_frame_equals(fp_sample_get_frame(sm, th->first_frame + k), sf, k, msg, msglen))
            return false;
        k++;
    }
    if (k != th->frame_count) {
        snprintf(msg, msglen, "%zu frames, described %zu visible", th->frame_count, k);
        return false;
    }
    return true;
}

int fz_attach(synth_image *img, fp_reader *rd, fp_session **s, fp_sample **sm)
{
    fp_options o;
    fp_options_init(&o);
    o.max_depth = FZ_MAX_NAMED_DEPTH;
    *s = NULL;
    *sm = NULL;
    if (fp_session_new(&o, s) || fp_sample_new(sm))
        return FP_E_NOMEM;
    fp_target_desc td;
    synth_reader(img, rd);
    synth_target(img, &td);
    return fp_session_attach_reader(*s, rd, &td);
}

void fz_release(fp_sample *sm, fp_session *s, synth_image *img, uint8_t *table)
{
    fp_sample_free(sm);
    fp_session_free(s);
    synth_free(img);
    free(table);
}
