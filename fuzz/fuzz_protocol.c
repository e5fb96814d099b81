/* fuzz_protocol.c — the parser of the unwinder-command protocol
 * (harness/adapters/protocol.c, docs/unwinder-protocol.md): the JSON
 * document an external unwinder prints for one sample.
 *
 * Input: two little-endian bytes, the fields the adapter declares (masked
 * to CF_PROTOCOL_FIELDS, whose thread fields and all_threads lie above the
 * first byte; 0: none, the document says), then the document.  Each parse
 * gets a fresh copy with exactly one writable byte after it (the parser
 * rewrites the text in place and may write text[len]).
 * Oracle:
 *  - a documented code only (CF_OK, CF_E_FORMAT, CF_E_LIMIT, CF_E_NOMEM),
 *    a message with every failure;
 *  - a parsed sample is well formed: the threads tile the frame array,
 *    strings present, UTF-8 (lone surrogates in their 3-byte form allowed)
 *    without NUL, kinds and exception states known, positions CF_POS_NONE
 *    or non-negative, ids within 0 .. 2^64-2, a thread with an error has no
 *    frames;
 *  - fields as protocol.h narrows them: exactly the declared fields when
 *    some are declared; otherwise within the protocol's, no frame field
 *    without a frame, no thread field without a thread, and a thread id or
 *    native id whenever there is a thread;
 *  - declaring is consistent with not declaring: a document parsed with
 *    nothing declared parses again with its reported fields declared, and
 *    one parsed with fields declared parses with none declared, to the
 *    same threads and frames, reporting at least the declared fields its
 *    threads and frames carry;
 *  - parsing the same text again gives the same code, message and sample.
 * Seeds: real `frameproof dump --json` documents (tests/data/protocol/,
 * and fuzz/seeds/make_seeds dumps a short workload).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "fuzz_common.h"
#include "protocol.h"
#include "sample.h"

#define ERR_LEN 512
#define PREFIX_BYTES 2
/* Fields a document can carry only on a thread or a frame. */
#define THREAD_ID_FIELDS (CF_FIELD_NATIVE_ID | CF_FIELD_THREAD_ID)
#define UTF8_MAX_CODEPOINT 0x10FFFFu

/* UTF-8 as protocol.h accepts it: shortest forms up to U+10FFFF,
 * surrogates allowed (lone ones are rewritten to their 3-byte encoding). */
static bool valid_utf8(const char *str)
{
    static const unsigned min_of[] = {0, 0, 0x80, 0x800, 0x10000};
    const unsigned char *p = (const unsigned char *)str;
    while (*p) {
        unsigned c = *p, len, cp;
        if (c < 0x80) {
            p++;
            continue;
        }
        if (c >= 0xF0 && c < 0xF8)
            len = 4, cp = c & 0x07;
        else if (c >= 0xE0 && c < 0xF0)
            len = 3, cp = c & 0x0F;
        else if (c >= 0xC0 && c < 0xE0)
            len = 2, cp = c & 0x1F;
        else
            return false;
        for (unsigned i = 1; i < len; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (p[i] & 0x3F);
        }
        if (cp < min_of[len] || cp > UTF8_MAX_CODEPOINT)
            return false;
        p += len;
    }
    return true;
}

static bool position_ok(int32_t v)
{
    return v == CF_POS_NONE || v >= 0;
}

static void check_sample(const cf_sample *s, unsigned declared)
{
    FUZZ_CHECK((s->fields & ~CF_PROTOCOL_FIELDS) == 0, "fields 0x%x beyond the protocol's", s->fields);
    if (declared) {
        FUZZ_CHECK(s->fields == declared, "fields 0x%x, declared 0x%x", s->fields, declared);
    } else {
        FUZZ_CHECK(s->nframes > 0 || (s->fields & CF_PROTOCOL_FRAME_FIELDS) == 0,
                   "frame fields 0x%x without a frame", s->fields & CF_PROTOCOL_FRAME_FIELDS);
        FUZZ_CHECK(s->nthreads > 0 || (s->fields & CF_PROTOCOL_THREAD_FIELDS) == 0,
                   "thread fields 0x%x without a thread", s->fields & CF_PROTOCOL_THREAD_FIELDS);
        FUZZ_CHECK(s->nthreads == 0 || (s->fields & THREAD_ID_FIELDS), "threads without ids (fields 0x%x)",
                   s->fields);
    }
    size_t next = 0;
    for (size_t i = 0; i < s->nthreads; i++) {
        const cf_thread *t = &s->threads[i];
        FUZZ_CHECK(t->first == next, "thread %zu starts at frame %zu, the previous ended at %zu", i, t->first,
                   next);
        FUZZ_CHECK(t->count <= s->nframes - t->first, "thread %zu: frames %zu+%zu of %zu", i, t->first, t->count,
                   s->nframes);
        FUZZ_CHECK(t->exception == CF_UNKNOWN || t->exception == CF_NO || t->exception == CF_YES,
                   "thread %zu: exception %d", i, t->exception);
        FUZZ_CHECK(t->native_id != UINT64_MAX && t->thread_id != UINT64_MAX, "thread %zu: an id out of range", i);
        FUZZ_CHECK(!t->error || (t->count == 0 && valid_utf8(t->error)), "thread %zu: error with %zu frames", i,
                   t->count);
        next = t->first + t->count;
    }
    FUZZ_CHECK(next == s->nframes, "%zu frames, the threads hold %zu", s->nframes, next);
    for (size_t i = 0; i < s->nframes; i++) {
        const cf_frame *f = &s->frames[i];
        FUZZ_CHECK(f->function && f->name && f->file, "frame %zu: a missing string", i);
        FUZZ_CHECK(valid_utf8(f->function) && valid_utf8(f->name) && valid_utf8(f->file),
                   "frame %zu: a string that is not UTF-8", i);
        FUZZ_CHECK(f->kind == CF_KIND_PYTHON || f->kind == CF_KIND_GENERATOR, "frame %zu: kind %d", i, f->kind);
        FUZZ_CHECK(position_ok(f->line) && position_ok(f->end_line) && position_ok(f->column) &&
                       position_ok(f->end_column),
                   "frame %zu: position (%d, %d, %d, %d)", i, f->line, f->end_line, f->column, f->end_column);
    }
}

static bool same_string(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* The same threads and frames (fields aside). */
static void check_same(const cf_sample *a, const cf_sample *b, const char *what)
{
    FUZZ_CHECK(a->nthreads == b->nthreads && a->nframes == b->nframes, "%s: %zu/%zu threads, %zu/%zu frames",
               what, a->nthreads, b->nthreads, a->nframes, b->nframes);
    for (size_t i = 0; i < a->nthreads; i++) {
        const cf_thread *x = &a->threads[i], *y = &b->threads[i];
        FUZZ_CHECK(x->native_id == y->native_id && x->thread_id == y->thread_id && x->interp_id == y->interp_id &&
                       x->main == y->main && x->exception == y->exception && same_string(x->error, y->error) &&
                       x->first == y->first && x->count == y->count,
                   "%s: thread %zu differs", what, i);
    }
    for (size_t i = 0; i < a->nframes; i++) {
        const cf_frame *x = &a->frames[i], *y = &b->frames[i];
        FUZZ_CHECK(same_string(x->function, y->function) && same_string(x->name, y->name) &&
                       same_string(x->file, y->file) && x->line == y->line && x->end_line == y->end_line &&
                       x->column == y->column && x->end_column == y->end_column && x->kind == y->kind &&
                       x->frame_addr == y->frame_addr,
                   "%s: frame %zu differs", what, i);
    }
}

/* Parses a fresh copy of the text into s (reset to every protocol field,
 * as the command adapter's sample starts without --unwinder-cmd-fields). */
static int parse(const uint8_t *text, size_t len, unsigned declared, cf_sample *s, char *err)
{
    char *buf = malloc(len + 1);
    if (!buf) {
        strcpy(err, "out of memory (the fuzz target)");
        return CF_E_NOMEM;
    }
    memcpy(buf, text, len);
    buf[len] = 'x'; /* the parser must not read it as part of the text */
    cf_sample_reset(s, CF_PROTOCOL_FIELDS);
    err[0] = 0;
    int rc = cf_protocol_parse(buf, len, declared, s, err, ERR_LEN);
    free(buf);
    FUZZ_CHECK(rc == CF_OK || rc == CF_E_FORMAT || rc == CF_E_LIMIT || rc == CF_E_NOMEM, "code %d", rc);
    FUZZ_CHECK_MESSAGE(rc, err);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < PREFIX_BYTES)
        return 0;
    unsigned declared = fpi_le_get_u16(data) & CF_PROTOCOL_FIELDS;
    const uint8_t *text = data + PREFIX_BYTES;
    size_t len = size - PREFIX_BYTES;
    cf_sample a, b;
    char err[ERR_LEN], err2[ERR_LEN];
    cf_sample_init(&a);
    cf_sample_init(&b);
    int rc = parse(text, len, declared, &a, err);
    if (rc == CF_OK)
        check_sample(&a, declared);
    if (rc != CF_E_NOMEM) {
        int rc2 = parse(text, len, declared, &b, err2);
        FUZZ_CHECK(rc2 == rc && strcmp(err, err2) == 0, "two parses: %d (%s) then %d (%s)", rc, err, rc2, err2);
        FUZZ_CHECK(a.fields == b.fields, "two parses: fields 0x%x then 0x%x", a.fields, b.fields);
        check_same(&a, &b, "two parses");
    }
    if (rc == CF_OK && declared == 0 && a.fields != 0) {
        /* every reported key is on every thread (frame): declaring them holds */
        int rc2 = parse(text, len, a.fields, &b, err2);
        FUZZ_CHECK(rc2 == CF_OK, "reports fields 0x%x but fails with them declared: %s", a.fields, err2);
        check_sample(&b, a.fields);
        check_same(&a, &b, "declaring the reported fields");
    } else if (rc == CF_OK && declared != 0) {
        /* declared keys present where there are threads (frames); all_threads
         * may be asserted by the declaration alone */
        int rc2 = parse(text, len, 0, &b, err2);
        FUZZ_CHECK(rc2 == CF_OK, "parses with fields 0x%x declared but not without: %s", declared, err2);
        check_sample(&b, 0);
        check_same(&a, &b, "declaring nothing");
        unsigned carried = declared & ~CF_FIELD_ALL_THREADS;
        if (a.nthreads == 0)
            carried &= ~CF_PROTOCOL_THREAD_FIELDS;
        if (a.nframes == 0)
            carried &= ~CF_PROTOCOL_FRAME_FIELDS;
        FUZZ_CHECK((b.fields & carried) == carried, "declared 0x%x, the document reports 0x%x", declared,
                   b.fields);
    }
    cf_sample_free(&a);
    cf_sample_free(&b);
    return 0;
}
