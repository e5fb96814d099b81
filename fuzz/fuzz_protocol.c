/* fuzz_protocol.c — the parser of the unwinder-command protocol
 * (harness/adapters/protocol.c, docs/unwinder-protocol.md): the JSON
 * document an external unwinder prints for one sample.
 *
 * Input: two little-endian bytes, the fields the adapter declares (masked
 * to CF_PROTOCOL_FIELDS; 0: none, the document says), then the document.
 * Oracle: a documented code only (CF_OK, CF_E_FORMAT, CF_E_LIMIT,
 * CF_E_NOMEM), a message with every failure; a parsed sample is well
 * formed (every thread's frames inside the frame array, strings present,
 * kinds known, fields within what the protocol can carry and what was
 * declared); parsing the same text again gives the same sample.
 * Seeds: real `frameproof dump --json` documents (tests/data/protocol/).
 */
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "fuzz_common.h"
#include "protocol.h"
#include "sample.h"

#define ERR_LEN 512
#define PREFIX_BYTES 2

static void check_sample(const cf_sample *s, unsigned declared)
{
    FUZZ_CHECK((s->fields & ~CF_PROTOCOL_FIELDS) == 0, "fields 0x%x beyond the protocol's", s->fields);
    FUZZ_CHECK(declared == 0 || (s->fields & ~declared) == 0, "fields 0x%x beyond the declared 0x%x", s->fields,
               declared);
    for (size_t i = 0; i < s->nthreads; i++) {
        const cf_thread *t = &s->threads[i];
        FUZZ_CHECK(t->first <= s->nframes && t->count <= s->nframes - t->first, "thread %zu: frames %zu+%zu of %zu",
                   i, t->first, t->count, s->nframes);
        FUZZ_CHECK(t->exception >= CF_UNKNOWN && t->exception <= CF_YES, "thread %zu: exception %d", i, t->exception);
    }
    for (size_t i = 0; i < s->nframes; i++) {
        const cf_frame *f = &s->frames[i];
        FUZZ_CHECK(f->function && f->name && f->file, "frame %zu: a missing string", i);
        FUZZ_CHECK(f->kind == CF_KIND_PYTHON || f->kind == CF_KIND_GENERATOR, "frame %zu: kind %d", i, f->kind);
    }
}

static int parse(const uint8_t *text, size_t len, unsigned declared, cf_sample *s, char *err)
{
    char *buf = malloc(len + 1); /* the parser may write text[len] */
    if (!buf)
        return CF_E_NOMEM;
    memcpy(buf, text, len);
    buf[len] = 0;
    cf_sample_reset(s, CF_PROTOCOL_FIELDS);
    int rc = cf_protocol_parse(buf, len, declared, s, err, ERR_LEN);
    free(buf);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < PREFIX_BYTES)
        return 0;
    unsigned declared = fz_le16(data) & CF_PROTOCOL_FIELDS;
    cf_sample a, b;
    char err[ERR_LEN] = "", err2[ERR_LEN] = "";
    cf_sample_init(&a);
    cf_sample_init(&b);
    int rc = parse(data + PREFIX_BYTES, size - PREFIX_BYTES, declared, &a, err);
    FUZZ_CHECK(rc == CF_OK || rc == CF_E_FORMAT || rc == CF_E_LIMIT || rc == CF_E_NOMEM, "code %d", rc);
    FUZZ_CHECK(rc == CF_OK || err[0], "error %d without a message", rc);
    if (rc == CF_OK) {
        check_sample(&a, declared);
        int rc2 = parse(data + PREFIX_BYTES, size - PREFIX_BYTES, declared, &b, err2);
        FUZZ_CHECK(rc2 == CF_OK, "second parse failed: %s", err2);
        FUZZ_CHECK(a.fields == b.fields && a.nthreads == b.nthreads && a.nframes == b.nframes,
                   "two parses differ");
        for (size_t i = 0; i < a.nframes; i++)
            FUZZ_CHECK(strcmp(a.frames[i].function, b.frames[i].function) == 0 &&
                           strcmp(a.frames[i].file, b.frames[i].file) == 0 && a.frames[i].line == b.frames[i].line,
                       "two parses differ at frame %zu", i);
    }
    cf_sample_free(&a);
    cf_sample_free(&b);
    return 0;
}
