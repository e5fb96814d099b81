/* synth_fixture.c — building a synthetic image of a description, sampling
 * it and checking the stacks against the description; the readers that
 * change an image under a sample (synth_fixture.h). */
#include "synth_fixture.h"

void load_table(const char *id, uint8_t *buf)
{
    const char *dir = getenv("FP_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/debug_offsets/%s.bin", dir ? dir : "tests/data", id);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    size_t n = fread(buf, 1, TABLE_BYTES, f);
    fclose(f);
    assert_int_equal(n, TABLE_BYTES);
}

bool has_table(const char *id)
{
    return strcmp(id, "3.11") != 0 && strcmp(id, "3.12") != 0;
}

/* Free-threaded 3.14+ runs thread-local copies of the bytecode. */
bool has_tlbc(const char *id)
{
    return strcmp(id, "3.14t") == 0 || strcmp(id, "3.15t") == 0;
}

/* Units before location entry i. */
int loc_start(const synth_code *c, int i)
{
    int u = 0;
    for (int k = 0; k < i; k++)
        u += c->locs[k].units;
    return u;
}

void build(const char *id, const synth_desc *d, uint32_t max_depth, built *b)
{
    static uint8_t table[TABLE_BYTES];
    char err[512] = "";
    if (has_table(id))
        load_table(id, table);
    int rc = synth_build(id, has_table(id) ? table : NULL, TABLE_BYTES, d, &b->img, err, sizeof err);
    if (rc)
        fail_msg("%s: %s", id, err);
    fp_options o;
    fp_options_init(&o);
    o.max_depth = max_depth;
    assert_int_equal(fp_session_new(&o, &b->s), FP_OK);
    assert_int_equal(fp_sample_new(&b->sm), FP_OK);
    synth_reader(b->img, &b->rd);
    fp_target_desc td;
    synth_target(b->img, &td);
    rc = fp_session_attach_reader(b->s, &b->rd, &td);
    if (rc)
        fail_msg("%s: attach: %s", id, fp_session_get_errmsg(b->s));
}

/* The address of the image's first (here only) interpreter state, read
 * from the runtime's list of interpreters. */
uint64_t first_interp(synth_image *img)
{
    fp_target_desc td;
    uint64_t interp;
    synth_target(img, &td);
    memcpy(&interp, synth_bytes(img, td.runtime_addr + (uint64_t)synth_layout(img)->rt_interpreters_head, 8), 8);
    return interp;
}

void unbuild(built *b)
{
    fp_sample_free(b->sm);
    fp_session_free(b->s);
    synth_free(b->img);
}

void check_thread(const char *id, const fp_sample *sm, size_t ti, const expect_frame *ex, size_t nex)
{
    const fp_thread *th = fp_sample_get_thread(sm, ti);
    assert_non_null(th);
    if (th->error)
        fail_msg("%s: thread %zu failed: %s", id, ti, fp_error_describe(th->error));
    if (th->frame_count != nex)
        fail_msg("%s: thread %zu has %zu frames, expected %zu", id, ti, th->frame_count, nex);
    for (size_t k = 0; k < nex; k++) {
        const fp_frame *f = fp_sample_get_frame(sm, th->first_frame + k);
        const synth_code *c = ex[k].code;
        const synth_loc *loc = &c->locs[ex[k].loc];
        if (strcmp(f->function, c->qualname) || strcmp(f->name, c->name) || strcmp(f->file, c->filename))
            fail_msg("%s: thread %zu frame %zu: got %s/%s/%s, expected %s/%s/%s", id, ti, k, f->function, f->name,
                     f->file, c->qualname, c->name, c->filename);
        if (f->line != loc->line || f->end_line != loc->end_line || f->column != loc->column ||
            f->end_column != loc->end_column)
            fail_msg("%s: thread %zu frame %zu (%s): got %d-%d:%d-%d, expected %d-%d:%d-%d", id, ti, k, c->qualname,
                     f->line, f->end_line, f->column, f->end_column, loc->line, loc->end_line, loc->column,
                     loc->end_column);
        assert_int_equal(f->kind, ex[k].generator ? FP_FRAME_GENERATOR : FP_FRAME_PYTHON);
        assert_int_equal(f->instr_offset, ex[k].unit);
    }
}

/* Takes a sample of the scene, which must succeed, and checks thread ti. */
void sample_is(const char *id, built *b, size_t ti, const expect_frame *ex, size_t nex)
{
    if (fp_session_sample(b->s, b->sm) != FP_OK)
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, ti, ex, nex);
}

/* The standard description: two threads covering every feature. */
void describe(const char *id, scene *sc)
{
    int tlbc = has_tlbc(id) ? 3 : 0;
    synth_frame a[] = {
        {&CODE_A, loc_start(&CODE_A, 1) + 1, false, false, 0},    /* inside entry 1 (2 units) */
        {&CODE_LATIN1, loc_start(&CODE_LATIN1, 1), false, true, 0},
        {&CODE_GEN, loc_start(&CODE_GEN, 1), true, false, 0},
        {&CODE_UCS2, 0, false, false, 0},
    };
    synth_frame b[] = {
        {&CODE_UCS4, loc_start(&CODE_UCS4, 1) + 7, false, false, tlbc},
        {&CODE_SHIM, 1, false, false, 0},                           /* hidden: before first traceable */
        {&CODE_A, loc_start(&CODE_A, 4) + 2, false, true, 0},      /* line 40000 */
        {&CODE_A, loc_start(&CODE_A, 3), false, false, 0},         /* no location */
    };
    memcpy(sc->t1, a, sizeof a);
    memcpy(sc->t2, b, sizeof b);
    sc->th[0] = (synth_thread){4242, 0x7f0000001000ull, true, sc->t1, 4};
    sc->th[1] = (synth_thread){4243, 0x7f0000002000ull, false, sc->t2, 4};
    sc->d = (synth_desc){0};
    sc->d.threads = sc->th;
    sc->d.nthreads = 2;
}

/* Gives b a new session attached through rd to b's image (its target
 * description): a test's own reader sees every read from the first. */
void reattach(built *b, const fp_reader *rd)
{
    fp_target_desc td;
    synth_target(b->img, &td);
    fp_session_free(b->s);
    fp_options o;
    fp_options_init(&o);
    assert_int_equal(fp_session_new(&o, &b->s), FP_OK);
    assert_int_equal(fp_session_attach_reader(b->s, rd, &td), FP_OK);
}

/* The standard scene, built and attached. */
void build_scene(const char *id, uint32_t max_depth, scene *sc, built *b)
{
    describe(id, sc);
    build(id, &sc->d, max_depth, b);
}

/* Runs `body` once per layout on a scene freshly made by `make`. */
void each_scene_made(void (*make)(const char *id, scene *sc, built *b), scene_case body)
{
    for (size_t i = 0; i < NLAYOUTS; i++) {
        scene sc;
        built b;
        make(LAYOUTS[i], &sc, &b);
        body(i, LAYOUTS[i], &b);
        unbuild(&b);
    }
}

void standard_scene(const char *id, scene *sc, built *b)
{
    build_scene(id, 0, sc, b);
}

void each_scene(scene_case body)
{
    each_scene_made(standard_scene, body);
}

/* The stack depth the synthetic frame at fa saved (its stacktop, or 3.14+
 * its stack pointer), as the walk reads it. */
int32_t saved_depth(built *b, uint64_t fa)
{
    const fpi_layout *l = synth_layout(b->img);
    return fpi_frame_depth(l, fa, synth_bytes(b->img, fa, (size_t)l->fr_size));
}

/* 3.11-3.13: thread 1's frame 2 suspended in a CALL under frame 1, whose
 * function is FUNC_CALLED, with `slot0` and `slot1` at its saved stack
 * depth (that of every stopped synthetic frame, read from it).  False
 * on a layout without them. */
bool call_with_slots_on(built *b, size_t t, uint64_t slot0, uint64_t slot1)
{
    const fpi_layout *l = synth_layout(b->img);
    fp_python_info py;
    if (l->fr_localsplus == FPI_OFF_NONE || fp_session_get_python(b->s, &py) != FP_OK)
        return false;
    const fpi_call_site_set *set = fpi_call_sites_for(3, (py.hexversion >> 16) & 0xffu);
    int call = -1;
    for (int v = 0; set && v < 256 && call < 0; v++)
        if (((set->callable_ops[v / 64] >> (v % 64)) & 1u) && ((set->ops[v / 64] >> (v % 64)) & 1u))
            call = v;
    assert_true(call >= 0);
    uint64_t back = set->minor < SUSPENDED_AT_INSTRUCTION_MINOR ? set->caches[call] : 0;
    uint64_t f1 = synth_frame_addr(b->img, t, 1), f2 = synth_frame_addr(b->img, t, 2);
    uint64_t start, unit1, unit2, units;
    wipe_code(b, f1, &start, &unit1, &units); /* frames 1 and 2 run the same code */
    wipe_code(b, f2, &start, &unit2, &units);
    assert_true(unit1 >= back && unit2 >= back && unit1 < units && unit2 < units);
    *synth_bytes(b->img, start + 2 * (unit1 - back), 1) = (uint8_t)call; /* frame 1 calls frame 0 */
    *synth_bytes(b->img, start + 2 * (unit2 - back), 1) = (uint8_t)call;
    int32_t depth = saved_depth(b, f2);
    assert_true(depth >= 0);
    uint64_t func = FUNC_CALLED, at = f2 + (uint64_t)l->fr_localsplus + 8u * (uint64_t)depth;
    memcpy(synth_bytes(b->img, f1 + (uint64_t)l->fr_funcobj, 8), &func, 8);
    memcpy(synth_bytes(b->img, at, 8), &slot0, 8);
    memcpy(synth_bytes(b->img, at + 8, 8), &slot1, 8);
    return true;
}

void on_retry(void *ctx, uint64_t native_id)
{
    retry_heard *h = ctx;
    h->calls++;
    h->native_id = native_id;
}

/* Moves a frame's instruction pointer by `units` code units. */
void move_instr(built *b, uint64_t frame, int units)
{
    const fpi_layout *l = synth_layout(b->img);
    uint8_t *p = synth_bytes(b->img, frame + (uint64_t)l->fr_instr_ptr, 8);
    uint64_t v;
    memcpy(&v, p, 8);
    v += (uint64_t)(int64_t)(units * 2);
    memcpy(p, &v, 8);
}

int racing_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    racing_reader *r = ctx;
    if (r->armed && addr <= r->watch && r->watch - addr < len && r->skip-- == 0) {
        r->armed = false;
        r->changed = true;
        r->changes++;
        r->change(r);
        if (r->fail)
            return r->fail;
    } else if (r->changed && r->count_at && addr == r->count_at && len == sizeof r->count_at) {
        r->counted++;
    }
    return fp_reader_read(&r->inner, addr, buf, len);
}

const fp_reader_ops RACING_OPS = {.name = "racing synthetic image", .read = racing_read};

/* A racing reader over b's image that runs `change` at the first read of
 * `watch` it is armed for (the caller sets ts/other as the change needs). */
racing_reader racing_over(const built *b, uint64_t watch, void (*change)(racing_reader *))
{
    return (racing_reader){.inner = b->rd, .img = b->img, .l = synth_layout(b->img), .watch = watch, .change = change};
}

/* The scene's thread 1 without the __init__ shim (three frames), as the
 * only thread or as both threads. */
void build_call_chain_scene(const char *id, size_t nthreads, scene *sc, built *b)
{
    describe(id, sc);
    sc->t2[1] = sc->t2[2];
    sc->t2[1].entry_below = false;
    sc->t2[2] = sc->t2[3];
    for (size_t t = 0; t < nthreads; t++) {
        sc->th[t].frames = sc->t2;
        sc->th[t].nframes = 3;
    }
    sc->d.nthreads = nthreads;
    build(id, &sc->d, 0, b);
}

void one_chain_scene(const char *id, scene *sc, built *b)
{
    build_call_chain_scene(id, 1, sc, b);
}

/* Runs body on the one-thread call-chain scene of every layout. */
void each_chain_scene(scene_case body)
{
    each_scene_made(one_chain_scene, body);
}
