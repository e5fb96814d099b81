/* synth_input.h — what the structure-aware fuzz targets share: reading a
 * fuzz input as a description of a CPython address space for the synthetic
 * image builder (unwinder/testing), and comparing an unwound thread with a
 * described stack.  Every input decodes to a valid description (bytes past
 * the end read as zero). */
#ifndef FUZZ_SYNTH_INPUT_H
#define FUZZ_SYNTH_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/frameproof.h"
#include "layout.h"
#include "synth.h"

#define FZ_MAX_THREADS 4
#define FZ_MAX_FRAMES 16
#define FZ_MAX_CODES 4
#define FZ_MAX_NAMED_DEPTH 1024u

typedef struct fz_cursor {
    const uint8_t *p;
    size_t n, pos;
} fz_cursor;

uint8_t fz_next_byte(fz_cursor *c);
uint16_t fz_next_u16(fz_cursor *c);

/* A name of every PEP 393 kind (empty and long ones among them), chosen
 * by the next byte. */
const char *fz_next_name(fz_cursor *c);

/* A layout id of synth.h, chosen by the next byte. */
const char *fz_next_layout(fz_cursor *c);

/* The 8 KiB debug-offsets table of a 3.13+ layout id (a fresh copy of
 * FPI_DEBUG_OFFSETS_READ bytes, NULL for 3.11/3.12), parsed into *probe
 * (3.11's built-in layout for 3.11/3.12).  Returns false when the table is
 * not available in this build or does not parse. */
bool fz_layout_table(const char *id, uint8_t **table, fpi_layout *probe);

typedef struct fz_description {
    synth_code codes[FZ_MAX_CODES];
    int code_units[FZ_MAX_CODES];
    size_t ncodes;
    synth_frame frames[FZ_MAX_THREADS][FZ_MAX_FRAMES];
    synth_thread threads[FZ_MAX_THREADS];
    synth_desc desc;
} fz_description;

/* Decodes code objects and threads' stacks for layout `id` into d. */
void fz_decode_description(fz_cursor *c, const char *id, bool tlbc, fz_description *d);
/* One code object: names of every PEP 393 kind, arbitrary locations. */
void fz_decode_code(fz_cursor *c, synth_code *code, int *units_out);

/* Compares frame k of an unwound stack with described frame sf (name,
 * position, instruction offset, kind).  Returns true when equal;
 * otherwise false with the difference in msg. */
bool fz_frame_equals(const fp_frame *fr, const synth_frame *sf, size_t k, char *msg, size_t msglen);

/* Compares thread th of sm with the described stack (innermost first;
 * frames before their first traceable instruction are hidden).  Returns
 * true when equal; otherwise false with the first difference in msg. */
bool fz_thread_equals(const fp_sample *sm, const fp_thread *th, const synth_frame *frames, size_t nframes,
                      char *msg, size_t msglen);

/* A new session (max_depth FZ_MAX_NAMED_DEPTH) attached to img through
 * *rd (the caller's: the session reads through it until freed), and a
 * sample: FP_E_NOMEM when either could not be made (*s and *sm are the
 * caller's to free either way), else what the attach returned. */
int fz_attach(synth_image *img, fp_reader *rd, fp_session **s, fp_sample **sm);

/* Frees what fz_layout_table and fz_attach gave (each may be NULL). */
void fz_release(fp_sample *sm, fp_session *s, synth_image *img, uint8_t *table);

#endif
