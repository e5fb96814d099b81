/* test_synth.c — synthetic images of every layout (3.11, 3.12, 3.13, 3.13t,
 * 3.14, 3.14t, 3.15, 3.15t) unwind to exactly their description: names of
 * every PEP 393 kind (compact and not), long-form positions and absent
 * ones, generator frames, entry frames, frames hidden before their first
 * traceable instruction, thread-local bytecode on free-threaded 3.14+.
 * Then corrupted images give a precise error on the damaged thread and an
 * exact stack on the others.  TAP via cmocka. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "call_sites.h"
#include "call_sites_table.h"
#include "frame.h"
#include "session.h"
#include "synth.h"
#include "verify.h"
#include "walk.h"

#define TABLE_BYTES 8192
#define SMALL_DEPTH 1000u

static const char *const LAYOUTS[] = {"3.11", "3.12", "3.13", "3.13t", "3.14", "3.14t", "3.15", "3.15t"};
#define NLAYOUTS (sizeof LAYOUTS / sizeof LAYOUTS[0])

static const synth_code CODE_A = {
    "Outer.method", "method", "/app/x.py", 10,
    {{1, 10, 10, 0, 0}, {2, 11, 11, 4, 20}, {4, 12, 13, 8, 30}, {1, FP_POS_NONE, FP_POS_NONE, FP_POS_NONE, FP_POS_NONE},
     {3, 40000, 40000, 2, 3}},
    5, false, 0};
static const synth_code CODE_LATIN1 = {
    "caf\xc3\xa9.na\xc3\xafve", "na\xc3\xafve", "/tmp/fa\xc3\xa7" "ade.py", 1,
    {{2, 3, 3, 1, 9}, {2, 2, 5, 0, 200}}, 2, false, 0};
static const synth_code CODE_UCS2 = {
    "\xe5\x87\xbd\xe6\x95\xb0.\xce\xa9mega", "\xce\xa9mega", "/srv/\xe6\xa8\xa1\xe5\x9d\x97.py", 7,
    {{1, 7, 7, FP_POS_NONE, FP_POS_NONE}, {3, 8, 8, 0, 1}}, 2, false, 0};
static const synth_code CODE_UCS4 = {
    "\xf0\x9d\x94\xa3.<locals>.g", "g", "/x/\xf0\x9d\x94\xa3.py", 100,
    {{8, 101, 101, 4, 5}, {8, 102, 102, 6, 7}}, 2, true, 0};
static const synth_code CODE_GEN = {
    "gen", "gen", "/app/g.py", 1, {{2, 2, 2, 4, 11}, {2, 3, 3, 4, 9}}, 2, false, 0};
static const synth_code CODE_SHIM = {
    "__init__", "__init__", "__init__", 0, {{4, FP_POS_NONE, FP_POS_NONE, FP_POS_NONE, FP_POS_NONE}}, 1, false, 4};

typedef struct expect_frame {
    const synth_code *code;
    int loc;                   /* index of the location entry */
    int unit;                  /* instruction offset */
    bool generator;
} expect_frame;

static void load_table(const char *id, uint8_t *buf)
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

static bool has_table(const char *id)
{
    return strcmp(id, "3.11") != 0 && strcmp(id, "3.12") != 0;
}

/* Free-threaded 3.14+ runs thread-local copies of the bytecode. */
static bool has_tlbc(const char *id)
{
    return strcmp(id, "3.14t") == 0 || strcmp(id, "3.15t") == 0;
}

/* Units before location entry i. */
static int loc_start(const synth_code *c, int i)
{
    int u = 0;
    for (int k = 0; k < i; k++)
        u += c->locs[k].units;
    return u;
}

typedef struct built {
    synth_image *img;
    fp_session *s;
    fp_sample *sm;
    fp_reader rd;
} built;

static void build(const char *id, const synth_desc *d, uint32_t max_depth, built *b)
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
static uint64_t first_interp(synth_image *img)
{
    fp_target_desc td;
    uint64_t interp;
    synth_target(img, &td);
    memcpy(&interp, synth_bytes(img, td.runtime_addr + (uint64_t)synth_layout(img)->rt_interpreters_head, 8), 8);
    return interp;
}

static void unbuild(built *b)
{
    fp_sample_free(b->sm);
    fp_session_free(b->s);
    synth_free(b->img);
}

static void check_thread(const char *id, const fp_sample *sm, size_t ti, const expect_frame *ex, size_t nex)
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
static void sample_is(const char *id, built *b, size_t ti, const expect_frame *ex, size_t nex)
{
    if (fp_session_sample(b->s, b->sm) != FP_OK)
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, ti, ex, nex);
}

typedef struct scene {
    synth_frame t1[4], t2[4];
    synth_thread th[2];
    synth_desc d;
} scene;

/* The standard description: two threads covering every feature. */
static void describe(const char *id, scene *sc)
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
static void reattach(built *b, const fp_reader *rd)
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
static void build_scene(const char *id, uint32_t max_depth, scene *sc, built *b)
{
    describe(id, sc);
    build(id, &sc->d, max_depth, b);
}

/* Runs `body` once per layout on a freshly built standard scene (unbuilt after). */
typedef void (*scene_case)(size_t layout, const char *id, built *b);

/* Runs `body` once per layout on a scene freshly made by `make`. */
static void each_scene_made(void (*make)(const char *id, scene *sc, built *b), scene_case body)
{
    for (size_t i = 0; i < NLAYOUTS; i++) {
        scene sc;
        built b;
        make(LAYOUTS[i], &sc, &b);
        body(i, LAYOUTS[i], &b);
        unbuild(&b);
    }
}

static void standard_scene(const char *id, scene *sc, built *b)
{
    build_scene(id, 0, sc, b);
}

static void each_scene(scene_case body)
{
    each_scene_made(standard_scene, body);
}

static const expect_frame EXPECT_T1[] = {
    {&CODE_A, 1, 2, false}, {&CODE_LATIN1, 1, 2, false}, {&CODE_GEN, 1, 2, true}, {&CODE_UCS2, 0, 0, false}};
static const expect_frame EXPECT_T2[] = {
    {&CODE_UCS4, 1, 15, false}, {&CODE_A, 4, 10, false}, {&CODE_A, 3, 7, false}};

static void round_trips_exactly(size_t layout, const char *id, built *b)
{
    (void)layout;
    int rc = fp_session_sample(b->s, b->sm);
    if (rc)
        fail_msg("%s: sample failed: %s", id, fp_session_get_errmsg(b->s));
    fp_python_info py;
    assert_int_equal(fp_session_get_python(b->s, &py), FP_OK);
    assert_int_equal(py.free_threaded, strchr(id, 't') != NULL);
    assert_int_equal(fp_sample_get_interp_count(b->sm), 1);
    assert_int_equal(fp_sample_get_thread_count(b->sm), 2);
    const fp_thread *m = fp_sample_get_thread(b->sm, 0);
    assert_int_equal(m->native_id, 4242);
    assert_int_equal(m->thread_id, 0x7f0000001000ull);
    assert_true(m->main);
    assert_false(fp_sample_get_thread(b->sm, 1)->main);
    assert_int_equal(m->exception, FP_NO);
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    /* A second sample through the warm cache gives the same answer. */
    sample_is(id, b, 0, EXPECT_T1, 4);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    print_message("# %s: round trip exact (%s)\n", id, py.version);
}

static void test_layouts_round_trip(void **state)
{
    (void)state;
    each_scene(round_trips_exactly);
}

enum corruption {
    C_CYCLE, C_NOT_CODE, C_IP_OUTSIDE, C_OWNER, C_TLBC_RANGE, C_NO_BASE, C_STR_STATE, C_WRAPPED_CHUNK,
    C_RETURNED_CALLER, C_CFRAME_EMPTY, C_SETUP_CALLER, C_CACHE_LOOKALIKE_CALLER, C_ARITHMETIC_CALLER,
    C_SEND_CALLER_3_11, C_CLEARED_CALLER_3_13, C_CLEARED_TOP_3_13, C_STOPPED_TOP, C_RESUME_CALLER,
    C_RESUMING_CALLER, C_RUNNING_CALLER, C_CALLER_UNDER_GENERATOR, C_COUNT
};
static const char *const CORRUPTION_NAME[C_COUNT] = {
    "frame cycle", "executable is not a code object", "instruction pointer outside the bytecode",
    "unknown frame owner", "tlbc_index out of range", "walk ends before the base frame", "invalid str state",
    "data-stack top below a chunk that wraps", "a caller that is not suspended in a call",
    "an evaluation's _PyCFrame with no frame yet", "a caller still being set up",
    "a caller whose cache data looks like a call just before it (3.13+)",
    "a caller at BINARY_OP, which pushes no frame before 3.14",
    "a 3.11 caller at SEND, which reaches its callee through C",
    "a 3.13 caller that has returned (its stack cleared)", "a 3.13 top frame that has returned (its stack cleared)",
    "a 3.11-3.13 top frame that is not running (a stack depth, not -1)",
    "a function's caller at RESUME or YIELD_VALUE, a call site of generators only (3.12+)",
    "a caller at SEND or FOR_ITER, which push only generator frames, under a function's frame (3.12+)",
    "a 3.11-3.13 caller that is running (stack depth -1) under a linked frame",
    "a caller at a call under a directly linked generator's frame, which only SEND and FOR_ITER resume there"};

#define CYCLE_FOUND_WITHIN 16u /* frames walked before a three-frame loop is found */
#define CYCLE_CUT_DEPTH 4u     /* a max_depth at which Brent's check has not closed that loop */

/* BINARY_OP's opcode and inline cache count in 3.11-3.13 (dis.opmap): an
 * instruction that never pushes a Python frame itself there. */
#define BINARY_OP_3_11 122u
#define BINARY_OP_3_13 45u
#define BINARY_OP_CACHES 1u
#define FIRST_MINOR_GETITEM_IN_BINARY_OP 14u
#define SUSPENDED_AT_INSTRUCTION_MINOR 13u /* callers point at the instruction from 3.13 */

/* SEND's opcode in 3.11 (dis.opmap; no inline cache): it resumes its
 * generator through C, whose frame is then marked is_entry, so no frame
 * linked directly above a caller at SEND is its callee there. */
#define SEND_3_11 123u
#define SEND_DIRECT_FIRST_MINOR 12u /* SEND_GEN pushes the generator's frame itself */

/* A data-stack top below its chunk, where chunk + header wraps around the
 * address space: once taken for a live part whose size (top - chunk)
 * wrapped to 64 MiB, copied with a huge allocation (out of memory, without
 * a message, under a memory limit).  It is corrupt data on that thread. */
#define WRAP_CHUNK 0xfffffffffffffff0ull
#define WRAP_TOP 0x3fffff0ull
#define WRAP_MESSAGE "data-stack top 0x3fffff0: below its chunk at 0xfffffffffffffff0"

/* Frame f's bytecode: where it starts, the unit f is at and the unit
 * count; every unit is zeroed (no instruction that pushes frames) for the
 * caller to place its own. */
static void wipe_code(built *b, uint64_t f, uint64_t *start, uint64_t *unit, uint64_t *units)
{
    const fpi_layout *l = synth_layout(b->img);
    uint64_t ip, code;
    memcpy(&ip, synth_bytes(b->img, f + (uint64_t)l->fr_instr_ptr, 8), 8);
    memcpy(&code, synth_bytes(b->img, f + (uint64_t)l->fr_executable, 8), 8);
    code &= ~l->executable_tag_mask;
    memcpy(units, synth_bytes(b->img, code + (uint64_t)l->ob_size, 8), 8);
    *start = code + (uint64_t)l->co_code_adaptive;
    *unit = (ip - *start) / 2;
    memset(synth_bytes(b->img, *start, (size_t)*units * 2), 0, (size_t)*units * 2);
}

/* The call-site opcode set of the image's version (NULL: none), and that
 * version's minor number. */
static const fpi_call_site_set *image_call_sites(built *b, unsigned *minor)
{
    fp_python_info py;
    if (fp_session_get_python(b->s, &py) != FP_OK)
        return NULL;
    *minor = (py.hexversion >> 16) & 0xffu;
    return fpi_call_sites_for(3, *minor);
}

static bool op_in(const uint64_t words[4], int v)
{
    return (words[v / 64] >> (v % 64)) & 1u;
}

/* The first frame-pushing opcode that resumes a generator (`resumes`:
 * SEND, FOR_ITER) or that pushes a function's frame (a call), or -1. */
static int pushing_opcode(const fpi_call_site_set *set, bool resumes)
{
    for (int v = 0; set && v < 256; v++)
        if (op_in(set->ops, v) && !op_in(set->gen_ops, v) && op_in(set->gen_callee_ops, v) == resumes)
            return v;
    return -1;
}

/* Frame f's code holds no frame-pushing instruction but `op`, which f is
 * suspended in: at f's unit (3.13+), or ending at it (3.11, 3.12, whose
 * callers name an instruction's last inline cache unit), the rest of the
 * code one-unit instructions as the instruction map decodes it.  False
 * when f's unit leaves no room for it. */
static bool suspend_in(built *b, uint64_t f, const fpi_call_site_set *set, unsigned minor, int op)
{
    uint64_t start, unit, units;
    wipe_code(b, f, &start, &unit, &units);
    uint64_t back = minor < SUSPENDED_AT_INSTRUCTION_MINOR ? set->caches[op] : 0;
    if (op < 0 || unit >= units || unit < back)
        return false;
    *synth_bytes(b->img, start + 2 * (unit - back), 1) = (uint8_t)op;
    return true;
}

/* Damages thread 1 (the second thread); thread 0 must stay exact. */
static bool corrupt(built *b, int what)
{
    const fpi_layout *l = synth_layout(b->img);
    uint64_t f0 = synth_frame_addr(b->img, 1, 0), f2 = synth_frame_addr(b->img, 1, 2);
    uint64_t f3 = synth_frame_addr(b->img, 1, 3);
    uint8_t *p;
    switch (what) {
    case C_CYCLE:
        p = synth_bytes(b->img, f2 + (uint64_t)l->fr_previous, 8);
        memcpy(p, &f0, 8);
        return true;
    case C_NOT_CODE: {
        /* point the executable at the frame's own filename str */
        uint8_t *ex = synth_bytes(b->img, f0 + (uint64_t)l->fr_executable, 8);
        uint64_t code;
        memcpy(&code, ex, 8);
        code &= ~l->executable_tag_mask;
        uint64_t fname;
        memcpy(&fname, synth_bytes(b->img, code + (uint64_t)l->co_filename, 8), 8);
        memcpy(ex, &fname, 8);
        return true;
    }
    case C_IP_OUTSIDE:
        p = synth_bytes(b->img, f0 + (uint64_t)l->fr_instr_ptr, 8);
        {
            uint64_t ip;
            memcpy(&ip, p, 8);
            ip += 4096;
            memcpy(p, &ip, 8);
        }
        return true;
    case C_OWNER:
        *synth_bytes(b->img, f2 + (uint64_t)l->fr_owner, 1) = 7;
        return true;
    case C_TLBC_RANGE:
        if (l->fr_tlbc_index == FPI_OFF_NONE)
            return false;
        {
            uint32_t idx = SYNTH_MAX_TLBC + 5;
            memcpy(synth_bytes(b->img, f0 + (uint64_t)l->fr_tlbc_index, 4), &idx, 4);
        }
        return true;
    case C_NO_BASE:
        if (l->ts_base_frame == FPI_OFF_NONE)
            return false;
        memset(synth_bytes(b->img, f3 + (uint64_t)l->fr_previous, 8), 0, 8);
        return true;
    case C_STR_STATE: {
        uint8_t *ex = synth_bytes(b->img, f0 + (uint64_t)l->fr_executable, 8);
        uint64_t code, name;
        memcpy(&code, ex, 8);
        code &= ~l->executable_tag_mask;
        memcpy(&name, synth_bytes(b->img, code + (uint64_t)l->co_qualname, 8), 8);
        uint32_t bad = 3u << l->uni_kind_shift | 1u << l->uni_compact_bit; /* kind 3 does not exist */
        memcpy(synth_bytes(b->img, name + (uint64_t)l->uni_state, 4), &bad, 4);
        return true;
    }
    case C_SETUP_CALLER: {
        /* Frame 2 (Outer.method) is a direct caller of frame 1 (the shim):
         * move it before its first instruction, as a frame being set up in
         * a slot that held the caller a moment ago. */
        uint8_t *ip = synth_bytes(b->img, f2 + (uint64_t)l->fr_instr_ptr, 8);
        uint64_t v;
        memcpy(&v, ip, 8);
        v -= (uint64_t)(loc_start(&CODE_A, 4) + 2 + 1) * 2;
        memcpy(ip, &v, 8);
        return true;
    }
    case C_CFRAME_EMPTY: {
        /* 3.11/3.12: the thread's current _PyCFrame (not its own root one)
         * says no frame, as in the instant an evaluation is entered. */
        if (l->ts_cframe == FPI_OFF_NONE)
            return false;
        uint64_t ts = synth_thread_state_addr(b->img, 1), cframe, zero = 0;
        memcpy(&cframe, synth_bytes(b->img, ts + (uint64_t)l->ts_cframe, 8), 8);
        if (cframe == ts + (uint64_t)l->ts_root_cframe)
            fail_msg("the synthetic thread runs on its root _PyCFrame");
        memcpy(synth_bytes(b->img, cframe + (uint64_t)l->cframe_current_frame, 8), &zero, 8);
        return true;
    }
    case C_RETURNED_CALLER: {
        /* Frame 1 is a direct callee of frame 2 in the standard scene:
         * give frame 2's code no instruction that pushes frames, as a
         * frame that has returned (or a dead slot) would look. */
        uint64_t start, unit, units;
        wipe_code(b, f2, &start, &unit, &units);
        return true;
    }
    case C_CACHE_LOOKALIKE_CALLER: {
        /* 3.13+ callers point at the instruction itself: frame 2's code
         * holds no frame-pushing instruction, but the unit its cache count
         * before frame 2's own holds a byte equal to one (as cache data
         * may), which a scan back from the unit would take for the call. */
        fp_python_info py;
        if (fp_session_get_python(b->s, &py) != FP_OK)
            return false;
        const fpi_call_site_set *set = fpi_call_sites_for(3, (py.hexversion >> 16) & 0xffu);
        if (!set || ((py.hexversion >> 16) & 0xffu) < 13)
            return false;
        int op = -1;
        for (int v = 0; v < 256 && op < 0; v++)
            if (((set->ops[v / 64] >> (v % 64)) & 1u) && set->caches[v] > 0)
                op = v;
        uint64_t start, unit, units;
        wipe_code(b, f2, &start, &unit, &units);
        if (op < 0 || unit < set->caches[op] || unit >= units)
            return false;
        *synth_bytes(b->img, start + 2 * (unit - set->caches[op]), 1) = (uint8_t)op;
        return true;
    }
    case C_ARITHMETIC_CALLER: {
        /* A caller at `x += 1` (BINARY_OP) under a directly linked callee:
         * a frame that returned from the call and went on to its next
         * statement, above which a later call of the same chain reused
         * the slots (seen live on 3.12).  Before 3.14 no BINARY_OP pushes
         * a Python frame, so the set of frame-pushing opcodes must leave
         * it out: frame 2's code holds BINARY_OP at its own unit and, on
         * 3.11/3.12, its cache count before it. */
        fp_python_info py;
        if (fp_session_get_python(b->s, &py) != FP_OK)
            return false;
        unsigned minor = (py.hexversion >> 16) & 0xffu;
        if (minor >= FIRST_MINOR_GETITEM_IN_BINARY_OP)
            return false;
        uint8_t op = (uint8_t)(minor >= SUSPENDED_AT_INSTRUCTION_MINOR ? BINARY_OP_3_13 : BINARY_OP_3_11);
        uint64_t start, unit, units;
        wipe_code(b, f2, &start, &unit, &units);
        if (unit < BINARY_OP_CACHES || unit >= units)
            return false;
        *synth_bytes(b->img, start + 2 * unit, 1) = op;
        if (minor < SUSPENDED_AT_INSTRUCTION_MINOR)
            *synth_bytes(b->img, start + 2 * (unit - BINARY_OP_CACHES), 1) = op;
        return true;
    }
    case C_SEND_CALLER_3_11: {
        /* A 3.11 coroutine at the SEND of an `await`, with the frame of the
         * function it called on the line before still in the slot above
         * it, linked to it and not an entry frame: read live, the
         * coroutine's frame was read after it had moved on (ci/live
         * generator_pingpong, coro_b at line 58 under work_b). */
        fp_python_info py;
        if (fp_session_get_python(b->s, &py) != FP_OK || ((py.hexversion >> 16) & 0xffu) >= SEND_DIRECT_FIRST_MINOR)
            return false;
        uint64_t start, unit, units;
        wipe_code(b, f2, &start, &unit, &units);
        if (unit >= units)
            return false;
        *synth_bytes(b->img, start + 2 * unit, 1) = SEND_3_11;
        return true;
    }
    case C_RESUME_CALLER: {
        /* 3.12+: a generator waits at YIELD_VALUE or RESUME under the one
         * it delegates to (gen.throw()); a function's frame there has just
         * been set up and has called nothing.  Frame 2, a function's, at
         * such an instruction under its directly linked callee (ci/live
         * thread_churn, 3.13: d2 at its first RESUME under a leaf_c of the
         * chain before, still in the slot above). */
        fp_python_info py;
        if (fp_session_get_python(b->s, &py) != FP_OK)
            return false;
        const fpi_call_site_set *set = fpi_call_sites_for(3, (py.hexversion >> 16) & 0xffu);
        int op = -1;
        for (int v = 0; set && v < 256 && op < 0; v++)
            if (((set->gen_ops[v / 64] >> (v % 64)) & 1u) && set->caches[v] == 0)
                op = v;
        uint64_t start, unit, units;
        wipe_code(b, f2, &start, &unit, &units);
        if (op < 0 || unit >= units)
            return false;
        *synth_bytes(b->img, start + 2 * unit, 1) = (uint8_t)op;
        return true;
    }
    case C_RESUMING_CALLER: {
        /* 3.12+: SEND and FOR_ITER push a frame only to resume a generator
         * or coroutine.  Frame 2, a function's, at one of them under its
         * directly linked callee, a function's frame (ci/live
         * generator_pingpong, 3.13t: coro_b at the SEND of its `await`
         * under the work_b it called on the line before): at the
         * instruction itself (3.13+), or at its inline cache unit (3.12,
         * whose callers point there), the rest of the code being one-unit
         * instructions (CACHE) as the instruction map decodes it. */
        fp_python_info py;
        if (fp_session_get_python(b->s, &py) != FP_OK)
            return false;
        unsigned minor = (py.hexversion >> 16) & 0xffu;
        const fpi_call_site_set *set = fpi_call_sites_for(3, minor);
        bool at_cache = minor < SUSPENDED_AT_INSTRUCTION_MINOR;
        if (!set || minor < SEND_DIRECT_FIRST_MINOR)
            return false;
        uint64_t start, unit, units;
        wipe_code(b, f2, &start, &unit, &units);
        int op = -1;
        for (int v = 0; v < 256 && op < 0; v++)
            if (((set->gen_callee_ops[v / 64] >> (v % 64)) & 1u) && (!at_cache || set->caches[v] > 0))
                op = v;
        uint64_t back = at_cache && op >= 0 ? set->caches[op] : 0;
        if (op < 0 || unit >= units || unit < back)
            return false;
        *synth_bytes(b->img, start + 2 * (unit - back), 1) = (uint8_t)op;
        return true;
    }
    case C_CALLER_UNDER_GENERATOR: {
        /* Frame 2 waits in a call under frame 1 made a generator's frame
         * (not waiting in a delegation): a caller that resumed the
         * generator and went on to its next call, read with the generator
         * still linked (3.11: no instruction links a generator's frame
         * directly at all). */
        unsigned minor;
        const fpi_call_site_set *set = image_call_sites(b, &minor);
        if (!set || !suspend_in(b, f2, set, minor, pushing_opcode(set, false)))
            return false;
        *synth_bytes(b->img, synth_frame_addr(b->img, 1, 1) + (uint64_t)l->fr_owner, 1) = (uint8_t)l->owner_generator;
        return true;
    }
    case C_RUNNING_CALLER: {
        /* 3.11-3.13: frame 2 runs (stacktop -1) with frame 1 linked above
         * it: frame 1 is a slot of an earlier chain that frame 2 has not
         * pushed into yet (ci/live thread_churn, 3.11). */
        if (l->fr_stacktop == FPI_OFF_NONE)
            return false;
        int32_t running = -1;
        memcpy(synth_bytes(b->img, f2 + (uint64_t)l->fr_stacktop, 4), &running, 4);
        return true;
    }
    case C_CLEARED_CALLER_3_13:
    case C_CLEARED_TOP_3_13: {
        /* 3.13 clears a returned frame's stack depth to 0 and leaves the
         * rest of it in its slot until the next call reuses it: a caller
         * at the call that will reuse the slot above it, read with the
         * slot's old frame, gave impossible stacks live (ci/live
         * many_threads: pad at its call of y1 under x1 -> x2 -> leaf_x;
         * y2 at its call of leaf_y under leaf_x).  Either frame cleared. */
        if (l->co_nlocalsplus == FPI_OFF_NONE)
            return false;
        uint32_t zero = 0;
        memcpy(synth_bytes(b->img, (what == C_CLEARED_TOP_3_13 ? f0 : f2) + (uint64_t)l->fr_stacktop, 4), &zero, 4);
        return true;
    }
    case C_STOPPED_TOP: {
        /* 3.11-3.13: the top frame has returned and its caller, at its next
         * call, is about to reuse the slot: its stack depth is its empty
         * value stack's, not the -1 of a running frame, and it is at no
         * call (ci/live many_threads, 3.11: x2 at its call of leaf_x under
         * leaf_y). */
        if (l->fr_stacktop == FPI_OFF_NONE)
            return false;
        uint32_t depth = 2;
        uint64_t start, unit, units;
        wipe_code(b, f0, &start, &unit, &units); /* at no call: a top stopped at one is calling */
        memcpy(synth_bytes(b->img, f0 + (uint64_t)l->fr_stacktop, 4), &depth, 4);
        return true;
    }
    case C_WRAPPED_CHUNK: {
        uint64_t t1 = synth_thread_state_addr(b->img, 1), chunk = WRAP_CHUNK, top = WRAP_TOP;
        memcpy(synth_bytes(b->img, t1 + (uint64_t)l->ts_datastack_chunk, 8), &chunk, 8);
        memcpy(synth_bytes(b->img, t1 + (uint64_t)l->ts_datastack_top, 8), &top, 8);
        return true;
    }
    default:
        return false;
    }
}

static void test_corruptions(void **state)
{
    (void)state;
    int checked = 0;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        for (int c = 0; c < C_COUNT; c++) {
            scene sc;
            built b;
            build_scene(id, SMALL_DEPTH, &sc, &b);
            if (!corrupt(&b, c)) {
                unbuild(&b);
                continue;
            }
            int rc = fp_session_sample(b.s, b.sm);
            if (rc == FP_OK)
                fail_msg("%s: %s: the sample succeeded", id, CORRUPTION_NAME[c]);
            if (rc != FP_E_INCOMPLETE && rc != FP_E_LIMIT)
                fail_msg("%s: %s: unexpected error %d (%s)", id, CORRUPTION_NAME[c], rc, fp_session_get_errmsg(b.s));
            assert_int_equal(fp_sample_get_thread_count(b.sm), 2);
            assert_int_not_equal(fp_sample_get_thread(b.sm, 1)->error, 0);
            assert_int_equal(fp_sample_get_thread(b.sm, 1)->frame_count, 0);
            check_thread(id, b.sm, 0, EXPECT_T1, 4);
            if (c == C_CYCLE) {
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "cycle"));
                /* found on its second lap, not after max_depth frames (and
                 * as many reads where they lie outside the data stack) */
                if (b.s->nseen > CYCLE_FOUND_WITHIN)
                    fail_msg("%s: the cycle was found after %zu frames", id, b.s->nseen);
            }
            if (c == C_RETURNED_CALLER || c == C_CACHE_LOOKALIKE_CALLER || c == C_ARITHMETIC_CALLER ||
                c == C_SEND_CALLER_3_11 || c == C_RESUME_CALLER)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "is not suspended in a call"));
            if (c == C_SETUP_CALLER)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "is being set up under a frame"));
            if (c == C_RESUMING_CALLER)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "resuming a generator under a frame"));
            if (c == C_CALLER_UNDER_GENERATOR)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "is not suspended resuming a generator under the"));
            if (c == C_RUNNING_CALLER)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "is running under the frame linked above it"));
            if (c == C_CLEARED_CALLER_3_13 || c == C_CLEARED_TOP_3_13)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "has returned: its stack was cleared"));
            if (c == C_STOPPED_TOP)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "the top, is not running"));
            if (c == C_CFRAME_EMPTY)
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "has no frame yet"));
            if (c == C_WRAPPED_CHUNK) {
                assert_string_equal(fp_session_get_errmsg(b.s), WRAP_MESSAGE);
                assert_int_equal(fp_sample_get_thread(b.sm, 1)->error, FP_E_CORRUPT);
            }
            unbuild(&b);
            checked++;
        }
    }
    print_message("# %d corrupted images rejected with an exact stack on the intact thread\n", checked);
}

/* 3.12: a caller at the last inline cache unit of a CALL, whose data byte
 * equals SEND, under a function's frame is where a CALL waits (parked
 * Thread._bootstrap and import_time frames): the instruction map tells the
 * cache unit from a SEND, so the stack comes back whole. */
static void cache_byte_like_send_passes(size_t layout, const char *id, built *b)
{
    (void)layout;
    fp_python_info py;
    assert_int_equal(fp_session_get_python(b->s, &py), FP_OK);
    unsigned minor = (py.hexversion >> 16) & 0xffu;
    const fpi_call_site_set *set = fpi_call_sites_for(3, minor);
    if (!set || minor < SEND_DIRECT_FIRST_MINOR || minor >= SUSPENDED_AT_INSTRUCTION_MINOR)
        return;
    int call = -1, send = -1;
    for (int v = 0; v < 256; v++) {
        uint64_t bit = 1ull << (v % 64);
        bool gen_callee = set->gen_callee_ops[v / 64] & bit;
        if (call < 0 && (set->ops[v / 64] & bit) && !(set->gen_ops[v / 64] & bit) && !gen_callee && set->caches[v] > 0)
            call = v;
        if (send < 0 && gen_callee)
            send = v;
    }
    assert_true(call >= 0 && send >= 0);
    uint64_t start, unit, units;
    wipe_code(b, synth_frame_addr(b->img, 1, 2), &start, &unit, &units);
    assert_true(unit >= set->caches[call] && unit < units);
    *synth_bytes(b->img, start + 2 * (unit - set->caches[call]), 1) = (uint8_t)call;
    *synth_bytes(b->img, start + 2 * unit, 1) = (uint8_t)send;
    int rc = fp_session_sample(b->s, b->sm);
    if (rc)
        fail_msg("%s: a CALL's cache unit holding SEND's byte was refused: %s", id, fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    print_message("# %s: a CALL's cache byte equal to SEND passes\n", id);
}

/* 3.11-3.13: gen.throw() links the delegating generator's frame straight
 * under the frame that called it, which runs (stack depth -1): a running
 * frame under a generator's frame is an instant Python has (parked
 * yield_from), so the stack comes back whole. */
static void running_under_generator_passes(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    if (l->fr_stacktop == FPI_OFF_NONE)
        return;
    int32_t running = -1;
    memcpy(synth_bytes(b->img, synth_frame_addr(b->img, 0, 3) + (uint64_t)l->fr_stacktop, 4), &running, 4);
    int rc = fp_session_sample(b->s, b->sm);
    if (rc)
        fail_msg("%s: a running frame under a generator's frame was refused: %s", id, fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
    print_message("# %s: a running frame under a generator's frame passes\n", id);
}

/* Function objects a synthetic frame and its caller's stack name (compared,
 * never read). */
#define FUNC_CALLED 0x7f0000a00000ull
#define FUNC_OTHER 0x7f0000b00000ull

/* The standard scene with thread 1's __init__ shim taken out: its frame 2
 * (Outer.method) then calls its frame 1 (Outer.method again) directly. */
static void build_direct_call_scene(const char *id, scene *sc, built *b)
{
    describe(id, sc);
    sc->t2[1] = sc->t2[2];
    sc->t2[1].entry_below = false;
    sc->t2[2] = sc->t2[3];
    sc->th[1].nframes = 3;
    build(id, &sc->d, 0, b);
}

/* The stack depth the synthetic frame at fa saved (its stacktop, or 3.14+
 * its stack pointer), as the walk reads it. */
static int32_t saved_depth(built *b, uint64_t fa)
{
    const fpi_layout *l = synth_layout(b->img);
    return fpi_frame_depth(l, fa, synth_bytes(b->img, fa, (size_t)l->fr_size));
}

/* 3.11-3.13: thread 1's frame 2 suspended in a CALL under frame 1, whose
 * function is FUNC_CALLED, with `slot0` and `slot1` at its saved stack
 * depth (that of every stopped synthetic frame, read from it).  False
 * on a layout without them. */
static bool call_with_slots_on(built *b, size_t t, uint64_t slot0, uint64_t slot1)
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

static bool call_with_slots(built *b, uint64_t slot0, uint64_t slot1)
{
    return call_with_slots_on(b, 1, slot0, slot1);
}

/* 3.11-3.13: a caller suspended in a CALL holds the function it called at
 * its stack depth (3.11, 3.12: or NULL there and the function above it)
 * until the call returns.  Holding another one, it had moved on from the
 * call that pushed the frame above it: a slot of another chain (ci/live
 * thread_churn, 3.13: churn_worker at its call of d1 under c1).  Refused
 * on a cold walk and through the frame cache; the callable where CPython
 * leaves it passes. */
static void callee_was_called_checked(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!call_with_slots(b, FUNC_CALLED, 0))
        return;
    sample_is(id, b, 1, EXPECT_T2, 3);
    assert_true(call_with_slots(b, 0, FUNC_CALLED)); /* 3.11, 3.12: no method call */
    sample_is(id, b, 1, EXPECT_T2, 3);
    for (int warm = 0; warm < 2; warm++) {
        if (!warm)
            reattach(b, &b->rd); /* a new session: no frame cache entry yet */
        assert_true(call_with_slots(b, FUNC_OTHER, FUNC_CALLED));
        int rc = fp_session_sample(b->s, b->sm);
        if (rc != FP_E_INCOMPLETE || !strstr(fp_session_get_errmsg(b->s), "in a call of another function"))
            fail_msg("%s: a caller holding another function was not refused (%s frame cache): %d %s", id,
                     warm ? "warm" : "cold", rc, fp_session_get_errmsg(b->s));
        assert_int_equal(fp_sample_get_thread(b->sm, 1)->frame_count, 0);
        check_thread(id, b->sm, 0, EXPECT_T1, 4);
        assert_true(call_with_slots(b, FUNC_CALLED, 0));
        sample_is(id, b, 1, EXPECT_T2, 3); /* warms the frame cache for the next round */
    }
    print_message("# %s: a caller holding another function than its callee's is refused\n", id);
}

static void test_callee_was_called(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        scene sc;
        built b;
        build_direct_call_scene(LAYOUTS[i], &sc, &b);
        callee_was_called_checked(i, LAYOUTS[i], &b);
        unbuild(&b);
    }
}

static void test_running_under_generator(void **state)
{
    (void)state;
    each_scene(running_under_generator_passes);
}

static void test_cache_byte_like_send(void **state)
{
    (void)state;
    each_scene(cache_byte_like_send_passes);
}

/* The walk reads ahead the thread states the previous sample saw; a thread
 * list that changes between samples must still be followed exactly. */
static void follows_thread_list_changes(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    uint64_t t0 = synth_thread_state_addr(b->img, 0), t1 = synth_thread_state_addr(b->img, 1), zero = 0;
    uint8_t *next0 = synth_bytes(b->img, t0 + (uint64_t)l->ts_next, 8);
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    assert_int_equal(fp_sample_get_thread_count(b->sm), 2);
    memcpy(next0, &zero, 8); /* the second thread exits */
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    assert_int_equal(fp_sample_get_thread_count(b->sm), 1);
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
    memcpy(next0, &t1, 8); /* and comes back */
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    assert_int_equal(fp_sample_get_thread_count(b->sm), 2);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    /* The head moves to the second thread, the first now after it. */
    uint64_t interp = first_interp(b->img);
    uint8_t *head = synth_bytes(b->img, interp + (uint64_t)l->interp_threads_head, 8);
    uint8_t *next1 = synth_bytes(b->img, t1 + (uint64_t)l->ts_next, 8);
    memcpy(head, &t1, 8);
    memcpy(next1, &t0, 8);
    memcpy(next0, &zero, 8);
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    assert_int_equal(fp_sample_get_thread_count(b->sm), 2);
    check_thread(id, b->sm, 0, EXPECT_T2, 3);
    check_thread(id, b->sm, 1, EXPECT_T1, 4);
    /* A list without the main thread's state is one being changed: the
     * main interpreter lists it for as long as it runs. */
    memcpy(next1, &zero, 8);
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_E_INCOMPLETE);
    assert_non_null(strstr(fp_session_get_errmsg(b->s), "lacks its main thread"));
}

static void test_thread_list_changes(void **state)
{
    (void)state;
    each_scene(follows_thread_list_changes);
}

/* A 3.15 image whose version says 3.16 (the runtime's _Py_DebugOffsets
 * version word and the target description): refused by default, unwound
 * with 3.15's knowledge and marked untested with fp_options.allow_untested. */
#define UNTESTED_HEX 0x031000f0u
#define DEBUG_OFFSETS_VERSION_POS 8

static void test_untested_version(void **state)
{
    (void)state;
    static const char *const ids[] = {"3.15", "3.15t"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        scene sc;
        built b;
        build_scene(ids[i], 0, &sc, &b); /* attached as 3.15 */
        fp_target_desc td;
        synth_target(b.img, &td);
        uint64_t v = UNTESTED_HEX;
        memcpy(synth_bytes(b.img, td.runtime_addr + DEBUG_OFFSETS_VERSION_POS, 8), &v, 8);
        for (int patched_desc = 0; patched_desc < 2; patched_desc++) {
            td.hexversion = patched_desc ? UNTESTED_HEX : 0;
            fp_session *s = NULL;
            fp_options o;
            fp_options_init(&o);
            assert_false(o.allow_untested);
            assert_int_equal(fp_session_new(&o, &s), FP_OK);
            assert_int_equal(fp_session_attach_reader(s, &b.rd, &td), FP_E_UNSUPPORTED);
            assert_string_equal(fp_session_get_errmsg(s),
                                "CPython 3.16: not supported (3.11–3.15 are; newer versions only with allow_untested)");
            fp_session_free(s);

            o.allow_untested = true;
            assert_int_equal(fp_session_new(&o, &s), FP_OK);
            if (fp_session_attach_reader(s, &b.rd, &td))
                fail_msg("%s: attach with allow_untested: %s", ids[i], fp_session_get_errmsg(s));
            fp_python_info py;
            assert_int_equal(fp_session_get_python(s, &py), FP_OK);
            assert_true(py.untested);
            assert_int_equal(py.hexversion, UNTESTED_HEX);
            assert_string_equal(py.version, "3.16.0");
            assert_int_equal(py.free_threaded, strchr(ids[i], 't') != NULL);
            if (fp_session_sample(s, b.sm))
                fail_msg("%s: untested sample: %s", ids[i], fp_session_get_errmsg(s));
            check_thread(ids[i], b.sm, 0, EXPECT_T1, 4);
            check_thread(ids[i], b.sm, 1, EXPECT_T2, 3);
            fp_session_free(s);
        }
        /* The tested version itself is never marked. */
        fp_python_info py;
        assert_int_equal(fp_session_get_python(b.s, &py), FP_OK);
        assert_false(py.untested);
        unbuild(&b);
    }
}

/* What fp_session_set_retry_hook's hook was told. */
typedef struct retry_heard {
    unsigned calls;
    uint64_t native_id; /* the last call's */
} retry_heard;

static void on_retry(void *ctx, uint64_t native_id)
{
    retry_heard *h = ctx;
    h->calls++;
    h->native_id = native_id;
}

/* Moves a frame's instruction pointer by `units` code units. */
static void move_instr(built *b, uint64_t frame, int units)
{
    const fpi_layout *l = synth_layout(b->img);
    uint8_t *p = synth_bytes(b->img, frame + (uint64_t)l->fr_instr_ptr, 8);
    uint64_t v;
    memcpy(&v, p, 8);
    v += (uint64_t)(int64_t)(units * 2);
    memcpy(p, &v, 8);
}

/* The frame cache against reused frame addresses (the "ABA" case): between
 * two samples the frames at the same addresses start running other code or
 * another instruction, as when another call chain reuses the slots.  Every
 * sample must report what the frames hold now.  A cache keyed on the frame
 * address alone (or on address and code object) fails this test; so does
 * taking a generator frame's bytes from the previous sample without the
 * read-back's check, and taking them again for the walk that follows the
 * batched read-back's finding (two torn walks where one is due). */
static void frames_reused_not_cached(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    uint64_t f0 = synth_frame_addr(b->img, 0, 0), f2 = synth_frame_addr(b->img, 0, 2);
    uint64_t f3 = synth_frame_addr(b->img, 0, 3);
    expect_frame ex[4];
    memcpy(ex, EXPECT_T1, sizeof ex);
    retry_heard heard = {0, 0};
    assert_int_equal(fp_session_set_retry_hook(b->s, on_retry, &heard), FP_OK);
    for (int round = 0; round < 2; round++) { /* the second round hits the cache */
        sample_is(id, b, 0, ex, 4);
    }
    /* The top frame moves to another instruction of the same code. */
    move_instr(b, f0, -2);
    ex[0] = (expect_frame){&CODE_A, 0, 0, false};
    sample_is(id, b, 0, ex, 4);
    /* The same slot now runs another code object. */
    memcpy(synth_bytes(b->img, f0 + (uint64_t)l->fr_executable, 8),
           synth_bytes(b->img, f3 + (uint64_t)l->fr_executable, 8), 8);
    memcpy(synth_bytes(b->img, f0 + (uint64_t)l->fr_instr_ptr, 8),
           synth_bytes(b->img, f3 + (uint64_t)l->fr_instr_ptr, 8), 8);
    ex[0] = (expect_frame){&CODE_UCS2, 0, 0, false};
    sample_is(id, b, 0, ex, 4);
    /* Frames on the data stack are read with it: none of that tore. */
    if (heard.calls != 0)
        fail_msg("%s: the retry hook called %u times for frames read with their data stack", id, heard.calls);
    /* The generator frame (outside the data stack) moved on: the walk that
     * took its bytes from the frame cache (in the batched walk of both
     * threads) is torn, once — the walk again reads it afresh rather than
     * taking the cache's bytes a second time. */
    fp_read_stats st0, st;
    assert_int_equal(fp_session_get_read_stats(b->s, &st0), FP_OK);
    move_instr(b, f2, -2);
    ex[2] = (expect_frame){&CODE_GEN, 0, 0, true};
    sample_is(id, b, 0, ex, 4);
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    if (st.torn - st0.torn != 1 || heard.calls != 1 || heard.native_id != fp_sample_get_thread(b->sm, 0)->native_id)
        fail_msg("%s: a cached generator frame that moved on: %llu torn walks, the hook called %u times (last with "
                 "%llu), expected 1, once, with %llu",
                 id, (unsigned long long)(st.torn - st0.torn), heard.calls, (unsigned long long)heard.native_id,
                 (unsigned long long)fp_sample_get_thread(b->sm, 0)->native_id);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    assert_int_equal(fp_session_set_retry_hook(b->s, NULL, NULL), FP_OK);
}

static void test_frame_cache_aba(void **state)
{
    (void)state;
    each_scene(frames_reused_not_cached);
}

/* A generator frame unlinked from its caller (previous NULL) ends the
 * walk: never a thread's whole stack (3.11: "ended at generator frame";
 * later versions: not an entry frame, or short of the base frame). */
static void unlinked_generator_ends_walk(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    uint64_t gen = synth_frame_addr(b->img, 0, 2), zero = 0;
    memcpy(synth_bytes(b->img, gen + (uint64_t)l->fr_previous, 8), &zero, 8);
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_E_INCOMPLETE);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->error, FP_E_INCOMPLETE);
    if (strcmp(id, "3.11") == 0)
        assert_non_null(strstr(fp_session_get_errmsg(b->s), "ended at generator frame"));
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
}

static void test_unlinked_generator(void **state)
{
    (void)state;
    each_scene(unlinked_generator_ends_walk);
}

/* Thread 0 of the standard scene on a stack a stack switcher started
 * (greenlet): its outermost frame's caller is an entry frame with no
 * caller, outside the data stack, where 3.15+ would have the base frame. */
static void switched_scene(const char *id, scene *sc, built *b)
{
    build_scene(id, 0, sc, b);
    if (strncmp(id, "3.15", 4) == 0 && !synth_switch_stack(b->img, 0))
        fail_msg("%s: cannot switch thread 0's stack", id);
}

enum switched_case {
    SW_WHOLE,         /* as built: the whole stack, exactly */
    SW_CUT_AT_ENTRY,  /* the entry frame under frame 1 loses its caller: frames of the data stack lie below */
    SW_ONLY_ENTRY,    /* the top names that entry frame, cut so: no frame of the data stack passed */
    SW_SHIM_BOTTOM,   /* the outermost frame, in the data stack, made interpreter-owned with no caller */
    SW_EXPOSED,       /* the outermost frame loses its caller (greenlet's links rewritten for a switch) */
    SW_COUNT
};
static const char *const SWITCHED_NAME[SW_COUNT] = {
    "the whole switched stack", "a chain cut at an entry frame above the data stack's first frame",
    "a chain of one cut entry frame over a data stack of frames",
    "an interpreter-owned frame inside the data stack at the bottom", "a chain ending at a Python frame",
};

static void switched_stack_case(const char *id, enum switched_case c)
{
    scene sc;
    built b;
    switched_scene(id, &sc, &b);
    const fpi_layout *l = synth_layout(b.img);
    uint64_t f1 = synth_frame_addr(b.img, 0, 1), f3 = synth_frame_addr(b.img, 0, 3), entry, zero = 0;
    memcpy(&entry, synth_bytes(b.img, f1 + (uint64_t)l->fr_previous, 8), 8);
    switch (c) {
    case SW_WHOLE:
        break;
    case SW_CUT_AT_ENTRY:
        memcpy(synth_bytes(b.img, entry + (uint64_t)l->fr_previous, 8), &zero, 8);
        break;
    case SW_ONLY_ENTRY: {
        memcpy(synth_bytes(b.img, entry + (uint64_t)l->fr_previous, 8), &zero, 8);
        uint64_t ts = synth_thread_state_addr(b.img, 0);
        if (l->ts_current_frame != FPI_OFF_NONE) {
            memcpy(synth_bytes(b.img, ts + (uint64_t)l->ts_current_frame, 8), &entry, 8);
        } else {
            uint64_t cf;
            memcpy(&cf, synth_bytes(b.img, ts + (uint64_t)l->ts_cframe, 8), 8);
            memcpy(synth_bytes(b.img, cf + (uint64_t)l->cframe_current_frame, 8), &entry, 8);
        }
        break;
    }
    case SW_SHIM_BOTTOM:
        *synth_bytes(b.img, f3 + (uint64_t)l->fr_owner, 1) =
            (uint8_t)(l->owner_interpreter >= 0 ? l->owner_interpreter : l->owner_cstack);
        memcpy(synth_bytes(b.img, f3 + (uint64_t)l->fr_previous, 8), &zero, 8);
        break;
    case SW_EXPOSED:
        memcpy(synth_bytes(b.img, f3 + (uint64_t)l->fr_previous, 8), &zero, 8);
        break;
    case SW_COUNT:
        break;
    }
    int rc = fp_session_sample(b.s, b.sm);
    if (c == SW_WHOLE) {
        if (rc != FP_OK)
            fail_msg("%s: %s: %s", id, SWITCHED_NAME[c], fp_session_get_errmsg(b.s));
        check_thread(id, b.sm, 0, EXPECT_T1, 4);
    } else if (l->ts_base_frame != FPI_OFF_NONE || (c == SW_EXPOSED && l->fr_is_entry == FPI_OFF_NONE)) {
        /* 3.15+ refuses every cut; 3.12-3.14, which end every chain at an
         * entry frame with no caller, refuse the one that ends at a Python
         * frame (3.11 marks the outermost frame itself as entered from C,
         * and greenlet rewrites no links there). */
        if (rc != FP_E_INCOMPLETE || fp_sample_get_thread(b.sm, 0)->error != FP_E_INCOMPLETE)
            fail_msg("%s: %s: came back as %d (thread 0: %d, %zu frames)", id, SWITCHED_NAME[c], rc,
                     fp_sample_get_thread(b.sm, 0)->error, fp_sample_get_thread(b.sm, 0)->frame_count);
    }
    check_thread(id, b.sm, 1, EXPECT_T2, 3);
    unbuild(&b);
}

/* A greenlet whose run is a generator's __next__ (called from C): the
 * outermost Python frame is the generator's, outside the data stack, and
 * the frame it called from C lies at the data stack's first slot.  Whole,
 * it is returned exactly (3.12+; 3.11 never samples a stack whose
 * outermost frame is a generator resumed from C, rule 5 of docs/design.md's live checks);
 * with the generator's link cleared, as greenlet leaves the outermost
 * Python frame while it switches away, it is refused: the walk ends
 * outside the data stack with nothing of it below, at a frame that was not
 * entered from C code. */
static void switched_generator_case(const char *id, bool exposed)
{
    const synth_frame frames[] = {
        {&CODE_A, loc_start(&CODE_A, 1) + 1, false, true, 0},
        {&CODE_GEN, loc_start(&CODE_GEN, 1), true, false, 0},
    };
    const expect_frame want[] = {{&CODE_A, 1, 2, false}, {&CODE_GEN, 1, 2, true}};
    synth_thread th[] = {{4242, 0x7f0000001000ull, true, frames, 2}};
    synth_desc d = {th, 1, NULL, 0};
    built b;
    build(id, &d, 0, &b);
    const fpi_layout *l = synth_layout(b.img);
    if (l->ts_base_frame != FPI_OFF_NONE && !synth_switch_stack(b.img, 0))
        fail_msg("%s: cannot switch thread 0's stack", id);
    if (exposed) {
        uint64_t zero = 0;
        memcpy(synth_bytes(b.img, synth_frame_addr(b.img, 0, 1) + (uint64_t)l->fr_previous, 8), &zero, 8);
    }
    int rc = fp_session_sample(b.s, b.sm);
    if (l->fr_is_entry != FPI_OFF_NONE || exposed) {
        if (rc != FP_E_INCOMPLETE || fp_sample_get_thread(b.sm, 0)->error != FP_E_INCOMPLETE)
            fail_msg("%s: a generator at the bottom of a switched stack%s came back as %d (%zu frames)", id,
                     exposed ? ", its link cleared," : "", rc, fp_sample_get_thread(b.sm, 0)->frame_count);
    } else {
        if (rc != FP_OK)
            fail_msg("%s: a generator at the bottom of a switched stack: %s", id, fp_session_get_errmsg(b.s));
        check_thread(id, b.sm, 0, want, 2);
    }
    unbuild(&b);
}

/* A running greenlet's stack (3.15+: ending short of the base frame) is
 * returned exactly on every layout, and each way of cutting such a chain
 * is refused where the base frame is the rule (walk.c,
 * ends_at_switched_stack_bottom: with any of its conditions removed, a
 * case here comes back as a shorter stack). */
static void test_switched_stack(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++)
        for (int c = 0; c < SW_COUNT; c++)
            switched_stack_case(LAYOUTS[i], (enum switched_case)c);
    for (size_t i = 0; i < NLAYOUTS; i++) {
        switched_generator_case(LAYOUTS[i], false);
        switched_generator_case(LAYOUTS[i], true);
    }
}

/* Expects the sample to fail thread 0 as corrupt with `what` in the
 * message, and thread 1 to stay exact. */
static void thread0_corrupt(const char *id, built *b, const char *what)
{
    int rc = fp_session_sample(b->s, b->sm);
    if (rc == FP_OK)
        fail_msg("%s: %s: the sample succeeded", id, what);
    const fp_thread *th = fp_sample_get_thread(b->sm, 0);
    assert_int_equal(th->error, FP_E_CORRUPT);
    assert_int_equal(th->frame_count, 0);
    if (!strstr(fp_session_get_errmsg(b->s), what))
        fail_msg("%s: expected \"%s\" in: %s", id, what, fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
}

/* Bounds a damaged image found past the walker (fuzz_image_unwind): a
 * code object's first traceable instruction must not be negative (a
 * negative one made frames before their first instruction visible, with
 * offset -1; one past the code's end is real: the __init__ shim's), and a generator's frame never points before its first
 * instruction (it is made at its RETURN_GENERATOR; such a frame was
 * returned with offset -1 and no position). */
static void position_bounds(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    uint64_t gen = synth_frame_addr(b->img, 0, 2), code;
    memcpy(&code, synth_bytes(b->img, gen + (uint64_t)l->fr_executable, 8), 8);
    code &= ~l->executable_tag_mask;
    uint8_t *ft = synth_bytes(b->img, code + (uint64_t)l->co_firsttraceable, 4);
    uint8_t saved[4];
    int32_t negative = -1;
    memcpy(saved, ft, 4);
    memcpy(ft, &negative, 4);
    thread0_corrupt(id, b, "first traceable instruction -1");
    memcpy(ft, saved, 4);
    sample_is(id, b, 0, EXPECT_T1, 4);
    move_instr(b, gen, -(int)(loc_start(&CODE_GEN, 1) + 1));
    thread0_corrupt(id, b, "outside the bytecode");
}

static void test_position_bounds(void **state)
{
    (void)state;
    each_scene(position_bounds);
}

/* The __init__ cleanup shim sits under the __init__ frame it pushed at an
 * instruction that is no call (EXIT_INIT_CHECK): hidden, and not subject to
 * the call-site check (a parked or stopped target showed it rejected). */
static void shim_skips_call_site_check(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    uint64_t shim = synth_frame_addr(b->img, 1, 1), code, units;
    memcpy(&code, synth_bytes(b->img, shim + (uint64_t)l->fr_executable, 8), 8);
    code &= ~l->executable_tag_mask;
    memcpy(&units, synth_bytes(b->img, code + (uint64_t)l->ob_size, 8), 8);
    memset(synth_bytes(b->img, code + (uint64_t)l->co_code_adaptive, (size_t)units * 2), 0, (size_t)units * 2);
    if (fp_session_sample(b->s, b->sm))
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
}

static void test_shim_not_checked(void **state)
{
    (void)state;
    each_scene(shim_skips_call_site_check);
}

/* A reader over a synthetic image that changes the image once, as a running
 * target would, just before the first read that touches a watched address. */
typedef struct racing_reader {
    fp_reader inner;
    uint64_t watch;
    int skip;                  /* reads of watch to let through first */
    void (*change)(struct racing_reader *);
    bool armed, changed;
    int fail;                  /* when set by change: what the read that triggered it returns */
    synth_image *img;
    const fpi_layout *l;
    uint64_t interp, ts, other;
    uint64_t count_at;         /* after the change: 8-byte reads of count_at, counted in counted */
    unsigned counted;
    unsigned changes;          /* times change ran (it may arm the reader again) */
} racing_reader;

static int racing_read(void *ctx, uint64_t addr, void *buf, size_t len)
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

static const fp_reader_ops RACING_OPS = {.name = "racing synthetic image", .read = racing_read};

/* A racing reader over b's image that runs `change` at the first read of
 * `watch` it is armed for (the caller sets ts/other as the change needs). */
static racing_reader racing_over(const built *b, uint64_t watch, void (*change)(racing_reader *))
{
    return (racing_reader){.inner = b->rd, .img = b->img, .l = synth_layout(b->img), .watch = watch, .change = change};
}

/* The head thread state is unlinked, freed and allocated again for a new
 * thread that is not linked yet (no frames, no next link). */
static void head_recreated(racing_reader *r)
{
    uint64_t zero = 0;
    memcpy(synth_bytes(r->img, r->interp + (uint64_t)r->l->interp_threads_head, 8), &r->other, 8);
    memcpy(synth_bytes(r->img, r->ts + (uint64_t)r->l->ts_next, 8), &zero, 8);
}

/* A thread state with no frames is read back like any other: copied while
 * it was being re-created at the same address, its empty next link would
 * otherwise end the thread list early and drop every thread after it
 * (3.15: the main thread missing from a sample returned as good). */
static void test_frameless_thread_recreated(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        synth_frame main_frames[] = {{&CODE_A, 0, false, false, 0}};
        synth_thread th[] = {{4243, 0x7f0000002000ull, false, NULL, 0},
                             {4242, 0x7f0000001000ull, true, main_frames, 1}};
        synth_desc d = {th, 2, NULL, 0};
        /* The change lands when the state is read (pass 0, 1: the second
         * reads ahead), or later, at the read-back of the main thread, whose
         * link the re-created state holds (pass 2, 3): followed as it is
         * then, that empty link lost the main thread (ci/live thread_churn,
         * debug builds, with the walk going on from a moved link). */
        for (int pass = 0; pass < 4; pass++) {
            int primed = pass % 2;
            built b;
            build(id, &d, 0, &b);
            racing_reader rr = racing_over(&b, synth_thread_state_addr(b.img, 0), head_recreated);
            if (pass >= 2) {
                rr.watch = synth_frame_addr(b.img, 1, 0);
                rr.skip = 1; /* its copy, then its read-back */
            }
            rr.interp = first_interp(b.img);
            rr.ts = synth_thread_state_addr(b.img, 0);
            rr.other = synth_thread_state_addr(b.img, 1);
            fp_reader racing = {&RACING_OPS, &rr};
            reattach(&b, &racing);
            if (primed) {
                assert_int_equal(fp_session_sample(b.s, b.sm), FP_OK);
                assert_int_equal(fp_sample_get_thread_count(b.sm), 2);
            }
            rr.armed = true;
            int rc = fp_session_sample(b.s, b.sm);
            assert_false(rr.armed);
            /* The re-created state is torn (it left the list); the walk goes
             * on from the head as it is now: the main thread alone. */
            if (rc != FP_OK || fp_sample_get_thread_count(b.sm) != 1 ||
                fp_sample_get_thread(b.sm, 0)->native_id != 4242)
                fail_msg("%s (pass %d): a sample of %zu thread(s) returned %s, expected the main thread alone", id,
                         pass, fp_sample_get_thread_count(b.sm), fp_error_describe(rc));
            fp_read_stats st;
            assert_int_equal(fp_session_get_read_stats(b.s, &st), FP_OK);
            assert_true(st.torn >= 1);
            unbuild(&b);
        }
    }
}

/* A new thread's state becomes the list's head in front of the thread
 * being walked (its link, the head, names the new state from then on). */
static void head_pushed(racing_reader *r)
{
    memcpy(synth_bytes(r->img, r->interp + (uint64_t)r->l->interp_threads_head, 8), &r->other, 8);
}

/* A thread started in front of the walked one while it was read: every
 * retry through the same link would tear the same way, so the walk makes
 * one attempt and the list is walked again from its head, with the new
 * thread (ci/live thread_churn, colocated: 8 attempts, each torn, per
 * thread started during a sample). */
static void test_thread_started_in_front(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        synth_frame main_frames[] = {{&CODE_A, 0, false, false, 0}, {&CODE_LATIN1, 0, false, false, 0}};
        synth_thread th[] = {{4243, 0x7f0000002000ull, false, NULL, 0},
                             {4242, 0x7f0000001000ull, true, main_frames, 2}};
        synth_desc d = {th, 2, NULL, 0};
        built b;
        build(id, &d, 0, &b);
        racing_reader rr = racing_over(&b, synth_frame_addr(b.img, 1, 0), head_pushed);
        rr.interp = first_interp(b.img);
        rr.other = synth_thread_state_addr(b.img, 0);
        /* Not started yet: the head is the main thread's state (the new
         * one already names it as its next, as a state pushed at the head
         * does). */
        uint64_t main_ts = synth_thread_state_addr(b.img, 1);
        memcpy(synth_bytes(b.img, rr.interp + (uint64_t)rr.l->interp_threads_head, 8), &main_ts, 8);
        rr.count_at = rr.interp + (uint64_t)rr.l->interp_threads_head;
        fp_reader racing = {&RACING_OPS, &rr};
        reattach(&b, &racing);
        rr.armed = true;
        int rc = fp_session_sample(b.s, b.sm);
        assert_false(rr.armed);
        if (rc != FP_OK || fp_sample_get_thread_count(b.sm) != 2)
            fail_msg("%s: a sample of %zu thread(s) returned %s, expected both threads", id,
                     fp_sample_get_thread_count(b.sm), fp_error_describe(rc));
        /* The link (here the list head) is read after the change by the
         * walk's read-back (it names another), by the check that it still
         * does, and by the new head thread's read-back: the restart takes
         * the check's verdict, and the head the check read, rather than
         * reading the link again (the builds before read it 5 and 4 times). */
        if (rr.counted != 3)
            fail_msg("%s: the moved link was read %u times after the change, expected 3", id, rr.counted);
        const fp_thread *mt = fp_sample_get_thread(b.sm, 1);
        if (mt->native_id != 4242 || mt->error || mt->frame_count != 2)
            fail_msg("%s: the main thread came back as %llu with %zu frames (%s)", id,
                     (unsigned long long)mt->native_id, mt->frame_count, fp_error_describe(mt->error));
        fp_read_stats st;
        assert_int_equal(fp_session_get_read_stats(b.s, &st), FP_OK);
        if (st.torn != 1)
            fail_msg("%s: %llu torn walks, expected 1 (no retry through the moved link)", id,
                     (unsigned long long)st.torn);
        unbuild(&b);
    }
}

/* The head thread exits and another starts in front of the main thread,
 * each time the head's state is read (re-armed for the new head, until
 * MAX_HEAD_SWAPS): every walk of the list tears at its head. */
#define MAX_HEAD_SWAPS 64u

static void head_swapped(racing_reader *r)
{
    uint64_t now = r->watch == r->ts ? r->other : r->ts;
    memcpy(synth_bytes(r->img, r->interp + (uint64_t)r->l->interp_threads_head, 8), &now, 8);
    if (r->changes < MAX_HEAD_SWAPS) {
        r->watch = now;
        r->skip = 0;
        r->armed = true;
    }
}

/* A thread list that changes under every walk of it is walked again from
 * its head a bounded number of times (FPI_THREAD_LIST_RESTARTS), then the
 * sample is rejected as incomplete: never a sample without the thread in
 * front, and never a walk that goes on as long as the list keeps moving. */
static void test_thread_list_restarts_bounded(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        synth_frame main_frames[] = {{&CODE_A, 0, false, false, 0}};
        synth_thread th[] = {{4243, 0x7f0000002000ull, false, NULL, 0},
                             {4244, 0x7f0000003000ull, false, NULL, 0},
                             {4242, 0x7f0000001000ull, true, main_frames, 1}};
        synth_desc d = {th, 3, NULL, 0};
        built b;
        build(id, &d, 0, &b);
        uint64_t first = synth_thread_state_addr(b.img, 0), second = synth_thread_state_addr(b.img, 1);
        uint64_t main_ts = synth_thread_state_addr(b.img, 2);
        racing_reader rr = racing_over(&b, first, head_swapped);
        rr.interp = first_interp(b.img);
        rr.ts = first;
        rr.other = second;
        /* Either one in front: both name the main thread as their next. */
        memcpy(synth_bytes(b.img, second + (uint64_t)rr.l->ts_next, 8), &main_ts, 8);
        memcpy(synth_bytes(b.img, first + (uint64_t)rr.l->ts_next, 8), &main_ts, 8);
        fp_reader racing = {&RACING_OPS, &rr};
        reattach(&b, &racing);
        rr.armed = true;
        int rc = fp_session_sample(b.s, b.sm);
        if (rc != FP_E_INCOMPLETE)
            fail_msg("%s: a list moving under every walk gave %s with %zu thread(s), expected incomplete", id,
                     fp_error_describe(rc), fp_sample_get_thread_count(b.sm));
        /* The first walk and every walk again from the head: each read
         * the head's state once and moved the head. */
        if (rr.changes != FPI_THREAD_LIST_RESTARTS + 1)
            fail_msg("%s: the list's head was read and moved %u times, expected %u", id, rr.changes,
                     FPI_THREAD_LIST_RESTARTS + 1);
        unbuild(&b);
    }
}

/* Threads come and go as synth_plan_thread_exit and _start write them: an
 * exited thread leaves the sample, a new one in its freed state comes
 * first (the list's head) under its own ids with no frame; the main thread
 * does not exit and an exited thread does not move. */
#define NEW_THREAD_ID 0x7f0000003000ull
#define MAX_LIFECYCLE_WRITES 32

static void apply_all(built *b, const synth_write *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        synth_apply(b->img, &w[i]);
}

/* The threads' scene: the main thread (native id 4242, one frame) and
 * another (4243, two frames). */
static void build_lifecycle(const char *id, built *b)
{
    synth_frame main_frames[] = {{&CODE_A, 0, false, false, 0}};
    synth_frame other_frames[] = {{&CODE_A, 0, false, false, 0}, {&CODE_A, 0, false, false, 0}};
    synth_thread th[] = {{4242, 0x7f0000001000ull, true, main_frames, 1},
                         {4243, 0x7f0000002000ull, false, other_frames, 2}};
    synth_desc d = {th, 2, NULL, 0};
    build(id, &d, 0, b);
}

/* Runs `body` on the threads' scene of every layout, cold and after two
 * samples (which read the thread list ahead); unbuilt after. */
typedef void (*lifecycle_case)(const char *id, int warm, built *b);

static void each_lifecycle(lifecycle_case body)
{
    for (size_t i = 0; i < NLAYOUTS; i++)
        for (int warm = 0; warm < 3; warm += 2) {
            built b;
            build_lifecycle(LAYOUTS[i], &b);
            body(LAYOUTS[i], warm, &b);
            unbuild(&b);
        }
}

static void test_thread_exit_and_start(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        built b;
        build_lifecycle(id, &b);
        synth_write w[MAX_LIFECYCLE_WRITES];
        size_t n = 0;
        assert_int_equal(fp_session_sample(b.s, b.sm), FP_OK);
        assert_int_equal(fp_sample_get_thread_count(b.sm), 2);
        assert_int_not_equal(synth_plan_thread_exit(b.img, 0, w, MAX_LIFECYCLE_WRITES, &n), 0); /* main */
        assert_int_equal(synth_plan_thread_exit(b.img, 1, w, MAX_LIFECYCLE_WRITES, &n), 0);
        apply_all(&b, w, n);
        assert_int_equal(fp_session_sample(b.s, b.sm), FP_OK);
        assert_int_equal(fp_sample_get_thread_count(b.sm), 1);
        assert_int_equal(fp_sample_get_thread(b.sm, 0)->native_id, 4242);
        n = 0;
        assert_int_not_equal(synth_plan_advance(b.img, 1, 1, w, MAX_LIFECYCLE_WRITES, &n), 0);
        assert_int_not_equal(synth_plan_move(b.img, 1, 1, NULL, 0, w, MAX_LIFECYCLE_WRITES, &n), 0);
        assert_int_equal(synth_plan_thread_start(b.img, 1, 4243, NEW_THREAD_ID, w, MAX_LIFECYCLE_WRITES, &n), 0);
        apply_all(&b, w, n);
        for (int pass = 0; pass < 2; pass++) { /* cold, then reading ahead */
            if (fp_session_sample(b.s, b.sm) != FP_OK)
                fail_msg("%s: after a thread started: %s", id, fp_session_get_errmsg(b.s));
            assert_int_equal(fp_sample_get_thread_count(b.sm), 2);
            const fp_thread *t0 = fp_sample_get_thread(b.sm, 0), *t1 = fp_sample_get_thread(b.sm, 1);
            assert_int_equal(t0->native_id, 4243);
            assert_int_equal(t0->thread_id, NEW_THREAD_ID);
            assert_false(t0->main);
            assert_int_equal(t0->frame_count, 0);
            assert_int_equal(t1->native_id, 4242);
            assert_true(t1->main);
            assert_int_equal(t1->frame_count, 1);
        }
        unbuild(&b);
    }
}

/* A thread exits while the sample reads it (unlinked between its copy and
 * its read-back, its state freed): the link that led to it leads past it
 * now, so the sample goes on without it and is good — the thread is not
 * in the list at the instant the rest of the sample was proven.  It was
 * rejected as incomplete after every attempt (ci/live thread_churn: a
 * worker exiting under the walk).  Cold and reading ahead. */
typedef struct exiting_reader {
    racing_reader rr;          /* first: the change gets a pointer to it */
    synth_write w[MAX_LIFECYCLE_WRITES];
    size_t n;
} exiting_reader;

static void thread_exits(racing_reader *r)
{
    const exiting_reader *e = (const exiting_reader *)r;
    for (size_t i = 0; i < e->n; i++)
        synth_apply(r->img, &e->w[i]);
}

static void thread_exits_during_walk(const char *id, int warm, built *b)
{
    exiting_reader er = {.rr = racing_over(b, synth_frame_addr(b->img, 1, 0), thread_exits)};
    assert_int_equal(synth_plan_thread_exit(b->img, 1, er.w, MAX_LIFECYCLE_WRITES, &er.n), 0);
    fp_reader racing = {&RACING_OPS, &er.rr};
    reattach(b, &racing);
    for (int k = 0; k < warm; k++)
        assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    er.rr.armed = true;
    er.rr.skip = 1; /* the copy reads the frame; the thread exits before the read-back */
    if (fp_session_sample(b->s, b->sm) != FP_OK)
        fail_msg("%s (after %d samples): %s", id, warm, fp_session_get_errmsg(b->s));
    assert_false(er.rr.armed);
    assert_int_equal(fp_sample_get_thread_count(b->sm), 1);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->native_id, 4242);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->frame_count, 1);
    fp_read_stats st;
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    assert_true(st.torn >= 1);
    reattach(b, &b->rd); /* the racing reader goes out of scope */
}

static void test_thread_exits_during_walk(void **state)
{
    (void)state;
    each_lifecycle(thread_exits_during_walk);
}

/* A cached code object is trusted for a walk only when confirmed inside
 * the window that walk is proven in (before 3.14: no code-object
 * generation).  The sample's first attempt confirms the bottom frame's
 * code object with its last read-back and is torn (frame 1 moved); before
 * the walk is tried again, that code object is replaced at its address by
 * one with another qualname, and frame 1 is back.  Trusted for the whole
 * sample, as it was, the entry gave the old qualname (ci/live code_churn,
 * 3.13, under load: `work_g36` calling `inner_g05`, an entry confirmed
 * milliseconds earlier in the same sample). */
typedef struct code_replacer {
    racing_reader rr;          /* first: the change gets a pointer to it */
    int stage;
    uint64_t f1_instr, instr, qualname_at, qualname;
} code_replacer;

static void confirm_then_replace(racing_reader *r)
{
    code_replacer *c = (code_replacer *)r;
    if (c->stage++ == 0) {
        /* Before the last read-back reads frame 1 again: it moved. */
        uint64_t moved = c->instr + 2;
        memcpy(synth_bytes(r->img, c->f1_instr, 8), &moved, 8);
        r->skip = 1; /* past the read-back's own read of the thread state, to the next walk's */
        r->armed = true;
        return;
    }
    memcpy(synth_bytes(r->img, c->f1_instr, 8), &c->instr, 8);
    memcpy(synth_bytes(r->img, c->qualname_at, 8), &c->qualname, 8);
}

static void code_confirmed_per_walk(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    if (l->interp_code_generation != FPI_OFF_NONE)
        return;
    uint64_t f0 = synth_frame_addr(b->img, 0, 0), f1 = synth_frame_addr(b->img, 0, 1);
    uint64_t f3 = synth_frame_addr(b->img, 0, 3), code_a, code_u;
    memcpy(&code_a, synth_bytes(b->img, f0 + (uint64_t)l->fr_executable, 8), 8);
    memcpy(&code_u, synth_bytes(b->img, f3 + (uint64_t)l->fr_executable, 8), 8);
    code_a &= ~l->executable_tag_mask;
    code_u &= ~l->executable_tag_mask;
    code_replacer c = {.rr = racing_over(b, f1 + (uint64_t)l->fr_instr_ptr, confirm_then_replace),
                       .f1_instr = f1 + (uint64_t)l->fr_instr_ptr,
                       .qualname_at = code_u + (uint64_t)l->co_qualname};
    memcpy(&c.instr, synth_bytes(b->img, c.f1_instr, 8), 8);
    memcpy(&c.qualname, synth_bytes(b->img, code_a + (uint64_t)l->co_qualname, 8), 8);
    fp_reader racing = {&RACING_OPS, &c.rr};
    reattach(b, &racing);
    for (int k = 0; k < 3; k++) /* warm: both threads read ahead, every code object cached */
        sample_is(id, b, 0, EXPECT_T1, 4);
    c.rr.armed = true;
    c.rr.skip = 2; /* the copy and the first read-back read frame 1; the last one meets the move */
    if (fp_session_sample(b->s, b->sm) != FP_OK)
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    if (c.stage != 2)
        fail_msg("%s: the change ran %d of its 2 stages", id, c.stage);
    const fp_thread *th = fp_sample_get_thread(b->sm, 0);
    assert_int_equal(th->frame_count, 4);
    const fp_frame *bottom = fp_sample_get_frame(b->sm, th->first_frame + 3);
    if (strcmp(bottom->function, CODE_A.qualname) != 0)
        fail_msg("%s: the replaced code object is named %s, expected %s", id, bottom->function, CODE_A.qualname);
    reattach(b, &b->rd); /* the racing reader goes out of scope */
}

static void test_code_confirmed_per_walk(void **state)
{
    (void)state;
    each_scene(code_confirmed_per_walk);
}

/* 3.14+: the interpreter's code-object generation grows whenever a code
 * object is freed, and the read-back reads it once for all the walks it
 * proves.  Here, in a steady-state sample (after the first read took the
 * generation, while the chunks are copied), the bottom frame's cached code
 * object is replaced at its address, the generation bumped: the walk made
 * with the cached entry is torn, the cache dropped, and the frame named
 * by the replacement.  Without the generation's check, the stale name came
 * back. */
typedef struct generation_bumper {
    racing_reader rr;          /* first: the change gets a pointer to it */
    uint64_t generation_at, qualname_at, qualname;
} generation_bumper;

static void replace_and_bump(racing_reader *r)
{
    const generation_bumper *g = (const generation_bumper *)r;
    uint64_t gen;
    memcpy(&gen, synth_bytes(r->img, g->generation_at, 8), 8);
    gen++;
    memcpy(synth_bytes(r->img, g->generation_at, 8), &gen, 8);
    memcpy(synth_bytes(r->img, g->qualname_at, 8), &g->qualname, 8);
}

static void code_generation_checked(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    if (l->interp_code_generation == FPI_OFF_NONE)
        return;
    uint64_t f0 = synth_frame_addr(b->img, 0, 0), f3 = synth_frame_addr(b->img, 0, 3), code_a, code_u;
    memcpy(&code_a, synth_bytes(b->img, f0 + (uint64_t)l->fr_executable, 8), 8);
    memcpy(&code_u, synth_bytes(b->img, f3 + (uint64_t)l->fr_executable, 8), 8);
    code_a &= ~l->executable_tag_mask;
    code_u &= ~l->executable_tag_mask;
    uint64_t interp = first_interp(b->img);
    generation_bumper g = {.rr = racing_over(b, f3, replace_and_bump),
                           .generation_at = interp + (uint64_t)l->interp_code_generation,
                           .qualname_at = code_u + (uint64_t)l->co_qualname};
    memcpy(&g.qualname, synth_bytes(b->img, code_a + (uint64_t)l->co_qualname, 8), 8);
    fp_reader racing = {&RACING_OPS, &g.rr};
    reattach(b, &racing);
    for (int k = 0; k < 3; k++) /* warm: both threads read ahead, every code object cached */
        sample_is(id, b, 0, EXPECT_T1, 4);
    g.rr.armed = true; /* the copy of the chunk that holds the bottom frame */
    if (fp_session_sample(b->s, b->sm) != FP_OK)
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    assert_false(g.rr.armed);
    const fp_thread *th = fp_sample_get_thread(b->sm, 0);
    assert_int_equal(th->frame_count, 4);
    const fp_frame *bottom = fp_sample_get_frame(b->sm, th->first_frame + 3);
    if (strcmp(bottom->function, CODE_A.qualname) != 0)
        fail_msg("%s: the replaced code object is named %s, expected %s", id, bottom->function, CODE_A.qualname);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    reattach(b, &b->rd); /* the racing reader goes out of scope */
}

static void test_code_generation_checked(void **state)
{
    (void)state;
    each_scene(code_generation_checked);
}

/* A code object first seen in a sample is read after the walk's read-back,
 * when its frame may have returned and the code object been freed and
 * replaced at its address.  Here the top frame returns just before its
 * code object's header is read, and the code object is replaced (its
 * qualname now the caller's): the walk is read back once more, found torn,
 * and walked again: the one-frame stack the thread has now.  Without that
 * read-back, the returned frame came back under the replacement's name. */
typedef struct late_replacer {
    racing_reader rr;          /* first: the change gets a pointer to it */
    synth_write w[MAX_LIFECYCLE_WRITES];
    size_t n;
    uint64_t qualname_at, qualname;
} late_replacer;

static void return_and_replace(racing_reader *r)
{
    const late_replacer *c = (const late_replacer *)r;
    for (size_t i = 0; i < c->n; i++)
        synth_apply(r->img, &c->w[i]);
    memcpy(synth_bytes(r->img, c->qualname_at, 8), &c->qualname, 8);
}

/* Arms r (the first read of a code object first seen: its header), takes
 * a sample, which must give thread 0's caller alone (CODE_A), and unbuilds b. */
static void late_race_leaves_caller(const char *id, built *b, racing_reader *r)
{
    r->armed = true;
    if (fp_session_sample(b->s, b->sm) != FP_OK)
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    assert_false(r->armed);
    const fp_thread *t = fp_sample_get_thread(b->sm, 0);
    if (t->frame_count != 1)
        fail_msg("%s: %zu frames (the top one named %s), expected the caller alone", id, t->frame_count,
                 fp_sample_get_frame(b->sm, t->first_frame)->function);
    assert_string_equal(fp_sample_get_frame(b->sm, t->first_frame)->function, CODE_A.qualname);
    reattach(b, &b->rd); /* the racing reader goes out of scope */
    unbuild(b);
}

static void test_late_code_read_back(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        synth_frame frames[] = {{&CODE_LATIN1, loc_start(&CODE_LATIN1, 1), false, false, 0},
                                {&CODE_A, loc_start(&CODE_A, 1) + 1, false, false, 0}};
        synth_thread th[] = {{4242, 0x7f0000001000ull, true, frames, 2}};
        synth_desc d = {th, 1, NULL, 0};
        built b;
        build(id, &d, 0, &b);
        const fpi_layout *l = synth_layout(b.img);
        uint64_t code_top, code_bottom;
        memcpy(&code_top, synth_bytes(b.img, synth_frame_addr(b.img, 0, 0) + (uint64_t)l->fr_executable, 8), 8);
        memcpy(&code_bottom, synth_bytes(b.img, synth_frame_addr(b.img, 0, 1) + (uint64_t)l->fr_executable, 8), 8);
        code_top &= ~l->executable_tag_mask;
        code_bottom &= ~l->executable_tag_mask;
        late_replacer c = {.rr = racing_over(&b, code_top, return_and_replace),
                           .qualname_at = code_top + (uint64_t)l->co_qualname};
        memcpy(&c.qualname, synth_bytes(b.img, code_bottom + (uint64_t)l->co_qualname, 8), 8);
        assert_int_equal(synth_plan_move(b.img, 0, 1, NULL, 0, c.w, MAX_LIFECYCLE_WRITES, &c.n), 0);
        fp_reader racing = {&RACING_OPS, &c.rr};
        reattach(&b, &racing);
        late_race_leaves_caller(id, &b, &c.rr); /* at the first read of the top frame's code object */
    }
}

/* The same, on the batched path: the two threads' list was read ahead by
 * warm samples, so the interpreter's walks are read back together; then the
 * thread calls a function never seen before, and returns from it (its code
 * object replaced) just before that code object is first read, after the
 * batch's read-back.  The batch must read its walks back once more. */
static void test_late_code_read_back_batched(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        synth_frame frames[] = {{&CODE_A, loc_start(&CODE_A, 1) + 1, false, false, 0}};
        synth_frame other[] = {{&CODE_UCS2, 0, false, false, 0}};
        synth_frame callee = {&CODE_LATIN1, loc_start(&CODE_LATIN1, 1), false, false, 0};
        synth_thread th[] = {{4242, 0x7f0000001000ull, true, frames, 1}, {4243, 0x7f0000002000ull, false, other, 1}};
        synth_desc d = {th, 2, &CODE_LATIN1, 1};
        built b;
        build(id, &d, 0, &b);
        const fpi_layout *l = synth_layout(b.img);
        late_replacer c = {.rr = racing_over(&b, 0, return_and_replace)};
        fp_reader racing = {&RACING_OPS, &c.rr};
        reattach(&b, &racing);
        for (int k = 0; k < 3; k++) /* warm: the thread list is read ahead */
            sample_is(id, &b, 0, (expect_frame[]){{&CODE_A, 1, 2, false}}, 1);
        synth_write call[MAX_LIFECYCLE_WRITES];
        size_t ncall = 0;
        assert_int_equal(synth_plan_move(b.img, 0, 0, &callee, 1, call, MAX_LIFECYCLE_WRITES, &ncall), 0);
        for (size_t w = 0; w < ncall; w++)
            synth_apply(b.img, &call[w]);
        /* The callee's code object, found by a session of its own (this
         * one must not see it before the race). */
        fp_session *peek;
        fp_options o;
        fp_options_init(&o);
        fp_target_desc td;
        synth_target(b.img, &td);
        assert_int_equal(fp_session_new(&o, &peek), FP_OK);
        assert_int_equal(fp_session_attach_reader(peek, &b.rd, &td), FP_OK);
        if (fp_session_sample(peek, b.sm) != FP_OK)
            fail_msg("%s: a sample of the callee: %s", id, fp_session_get_errmsg(peek));
        const fp_thread *t = fp_sample_get_thread(b.sm, 0);
        assert_int_equal(t->frame_count, 2);
        uint64_t code_top = fp_sample_get_frame(b.sm, t->first_frame)->code_addr;
        uint64_t code_bottom = fp_sample_get_frame(b.sm, t->first_frame + 1)->code_addr;
        fp_session_free(peek);
        c.rr.watch = code_top;
        c.qualname_at = code_top + (uint64_t)l->co_qualname;
        memcpy(&c.qualname, synth_bytes(b.img, code_bottom + (uint64_t)l->co_qualname, 8), 8);
        assert_int_equal(synth_plan_move(b.img, 0, 1, NULL, 0, c.w, MAX_LIFECYCLE_WRITES, &c.n), 0);
        late_race_leaves_caller(id, &b, &c.rr); /* at the first read of the callee's code object */
    }
}

/* 3.11's new_threadstate makes a new thread state the list's head before
 * it sets it up: its interpreter, next link and ids are still the
 * template's zeros.  A sample that meets the list so (its thread stopped in
 * that window, as in blocking mode) is incomplete, never a good sample of
 * one frameless thread without the main thread (ci/live thread_churn, 3.11,
 * blocking).  Cold, then after samples that read the list ahead. */
static void head_not_set_up(const char *id, int warm, built *b)
{
    for (int k = 0; k < warm; k++)
        assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    const fpi_layout *l = synth_layout(b->img);
    uint64_t interp = first_interp(b->img), ts = synth_thread_state_addr(b->img, 1), zero = 0;
    int32_t template_zeros[] = {l->ts_interp, l->ts_next, l->ts_native_thread_id, l->ts_thread_id};
    for (size_t f = 0; f < sizeof template_zeros / sizeof template_zeros[0]; f++)
        memcpy(synth_bytes(b->img, ts + (uint64_t)template_zeros[f], 8), &zero, 8);
    memcpy(synth_bytes(b->img, interp + (uint64_t)l->interp_threads_head, 8), &ts, 8);
    int rc = fp_session_sample(b->s, b->sm);
    if (rc != FP_E_INCOMPLETE)
        fail_msg("%s (after %d samples): %s with %zu threads, expected an incomplete sample", id, warm,
                 rc ? fp_error_describe(rc) : "a good sample", fp_sample_get_thread_count(b->sm));
    /* The state being set up is in the sample as a thread that failed, torn;
     * a thread left without an error would read as good (ids 0/0, no frames). */
    size_t unset = 0;
    for (size_t k = 0; k < fp_sample_get_thread_count(b->sm); k++) {
        const fp_thread *t = fp_sample_get_thread(b->sm, k);
        if (t->native_id == 0 && t->thread_id == 0) {
            unset++;
            if (t->error != FP_E_INCOMPLETE)
                fail_msg("%s (after %d samples): the state being set up is thread %zu with error %d, expected %d",
                         id, warm, k, t->error, FP_E_INCOMPLETE);
        }
    }
    assert_int_equal(unset, 1);
}

static void test_head_not_set_up(void **state)
{
    (void)state;
    each_lifecycle(head_not_set_up);
}

/* A reader that counts what it is asked, batched reads once each. */
/* Counts reads and, when `log` is set, records every range read in order
 * (those of a readv one by one). */
#define LOG_READS_MAX 4096
typedef struct read_log {
    size_t n;
    uint64_t addr[LOG_READS_MAX], len[LOG_READS_MAX];
} read_log;

typedef struct counting_reader {
    fp_reader inner;
    uint64_t calls, bytes;
    read_log *log;
} counting_reader;

static void log_range(counting_reader *r, uint64_t addr, size_t len)
{
    r->bytes += len;
    if (r->log && r->log->n < LOG_READS_MAX) {
        r->log->addr[r->log->n] = addr;
        r->log->len[r->log->n++] = len;
    }
}

static int counting_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    counting_reader *r = ctx;
    r->calls++;
    log_range(r, addr, len);
    return fp_reader_read(&r->inner, addr, buf, len);
}

static int counting_readv(void *ctx, const fp_iov *iov, size_t n)
{
    counting_reader *r = ctx;
    r->calls++;
    for (size_t i = 0; i < n; i++)
        log_range(r, iov[i].addr, iov[i].len);
    return fp_reader_readv(&r->inner, iov, n);
}

static const fp_reader_ops COUNTING_OPS = {.name = "counting", .read = counting_read, .readv = counting_readv};

/* Reads of a steady-state sample of the standard scene (two threads, one
 * generator frame outside the data stack), per layout in LAYOUTS order: the
 * sample's first read takes the runtime's words, the interpreter's (and
 * its GIL's), both thread states, and, where the last sample saw them,
 * their current frames (3.11, 3.12: in their _PyCFrame) and their chunks'
 * live parts, all at once, and, after them, the last sample's two
 * read-backs of both threads' walks, which this sample's read-backs take
 * (readback_ahead.c; they were two reads of their own), the second also
 * confirming the cached code objects where no code-object generation
 * exists (before 3.14).  Frames running thread-local bytecode (3.14t,
 * 3.15t) take their copy's address from the same read, which reads again
 * where the last sample found it (tlbc_ahead.c; it was three reads more,
 * after the read-backs).  Each thread's exception state holds None, whose
 * type is read once, never per sample (it was: one more read per thread on
 * 3.11 and 3.12).  Fewer is better; a change shows here. */
static const unsigned STEADY_READS[NLAYOUTS] = {1, 1, 1, 1, 1, 1, 1, 1};

/* fp_session_get_read_stats counts exactly the reader calls and bytes the
 * samples make (not those of attaching). */
static void read_stats_count_every_read(size_t layout, const char *id, built *b)
{
    counting_reader cr = {.inner = b->rd};
    fp_reader counting = {&COUNTING_OPS, &cr};
    reattach(b, &counting);
    fp_read_stats st;
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    assert_true(st.calls == 0 && st.bytes == 0 && st.torn == 0);
    cr.calls = cr.bytes = 0;
    for (int k = 0; k < 3; k++) {
        sample_is(id, b, 0, EXPECT_T1, 4);
        assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
        if (st.calls != cr.calls || st.bytes != cr.bytes)
            fail_msg("%s: sample %d: counted %llu reads, %llu bytes; the reader saw %llu, %llu", id, k,
                     (unsigned long long)st.calls, (unsigned long long)st.bytes, (unsigned long long)cr.calls,
                     (unsigned long long)cr.bytes);
    }
    uint64_t before = st.calls;
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    if (st.calls - before != STEADY_READS[layout])
        fail_msg("%s: a steady-state sample made %llu reads, expected %u", id,
                 (unsigned long long)(st.calls - before), STEADY_READS[layout]);
    assert_int_equal(st.torn, 0); /* nothing changed under any walk */
    assert_int_equal(fp_session_get_read_stats(NULL, &st), FP_E_INVALID_ARG);
}

static void test_read_stats(void **state)
{
    (void)state;
    each_scene(read_stats_count_every_read);
}

#define BELOW_LOWEST_FRAME 8u /* an address this far below a chunk's lowest frame: its header */

/* A loop that Brent's check has not closed when the walk reaches
 * max_depth is still named a cycle, not a stack deeper than the limit:
 * the frame there was followed before. */
#define CALL_UNIT_APART 4u /* a caller's unit past the widest CALL's cache units (3.11) */

/* How many ranges of the steady state's one read hold the lowest frame
 * of thread t: its copy and each read-back. */
static unsigned lowest_frame_reads(built *b, size_t t)
{
    read_log *lr = calloc(1, sizeof *lr);
    assert_non_null(lr);
    counting_reader cr = {.inner = b->rd, .log = lr};
    fp_reader rd = {&COUNTING_OPS, &cr};
    reattach(b, &rd);
    for (int k = 0; k < 4; k++) /* the last one: the steady state's one read */
    {
        lr->n = 0;
        assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    }
    uint64_t f2 = synth_frame_addr(b->img, t, 2);
    unsigned hits = 0;
    for (size_t i = 0; i < lr->n; i++)
        if (lr->addr[i] <= f2 && f2 - lr->addr[i] < lr->len[i])
            hits++;
    reattach(b, &b->rd);
    free(lr);
    return hits;
}

/* Thread t's three frames, each suspended in a CALL of the frame above it,
 * every link comparable by the callee check; false on a layout without it
 * (none since 3.14's stack pointer is read).  Frame 2 moved to the CALL at unit 4 (3.11: 4 cache
 * units after it), so that its instruction and frame 1's do not overlap. */
static bool every_link_comparable(built *b, size_t t)
{
    const fpi_layout *l = synth_layout(b->img);
    if (l->fr_localsplus == FPI_OFF_NONE)
        return false;
    uint64_t start, unit, units, f2 = synth_frame_addr(b->img, t, 2);
    wipe_code(b, f2, &start, &unit, &units);
    uint64_t ip = start + 2u * CALL_UNIT_APART;
    memcpy(synth_bytes(b->img, f2 + (uint64_t)l->fr_instr_ptr, 8), &ip, 8);
    assert_true(call_with_slots_on(b, t, FUNC_CALLED, 0));
    uint64_t f0 = synth_frame_addr(b->img, t, 0), f1 = synth_frame_addr(b->img, t, 1), func = FUNC_OTHER;
    int32_t depth = saved_depth(b, f1);
    assert_true(depth >= 0);
    memcpy(synth_bytes(b->img, f0 + (uint64_t)l->fr_funcobj, 8), &func, 8);
    memcpy(synth_bytes(b->img, f1 + (uint64_t)l->fr_localsplus + 8u * (uint64_t)depth, 8), &func, 8);
    return true;
}

/* Thread t's top frame with its function unknown: the link under it is
 * not compared. */
static void top_function_unknown(built *b, size_t t)
{
    uint64_t unknown = 0;
    memcpy(synth_bytes(b->img, synth_frame_addr(b->img, t, 0) + (uint64_t)synth_layout(b->img)->fr_funcobj, 8),
           &unknown, 8);
}

/* The callee-function check applies on every layout (3.11-3.13 through
 * the stack depth, 3.14+ through the stack pointer): a walk whose every
 * link between shown frames it compared is read back once; one with a link
 * it did not compare (here: the top frame's function unknown) twice.  A
 * thread of three frames, each suspended in a CALL of the frame above it. */
static void read_backs_per_link(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!every_link_comparable(b, 0))
        fail_msg("%s: the callee-function check does not apply to this layout", id);
    unsigned want = 1 + FPI_VERIFY_READS_CHECKED, got = lowest_frame_reads(b, 0);
    if (got != want)
        fail_msg("%s: every link compared: the lowest frame read %u times in a steady-state sample, expected %u "
                 "(its copy and %u read-backs)", id, got, want, want - 1);
    top_function_unknown(b, 0);
    want = 1 + FPI_VERIFY_READS;
    if ((got = lowest_frame_reads(b, 0)) != want)
        fail_msg("%s: a link not compared: the lowest frame read %u times in a steady-state sample, expected %u",
                 id, got, want);
    print_message("# %s: read back once when every link was compared, twice otherwise\n", id);
}

/* One sample of the call-chain scene, returned whole: thread 0's three
 * frames. */
static void chain_sampled(const char *id, built *b)
{
    if (fp_session_sample(b->s, b->sm) != FP_OK)
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->error, FP_OK);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->frame_count, 3);
}

/* 3.14+: the slot and f_funcobj hold stack references, compared without
 * their tag bits (the callee's f_funcobj took the caller's reference over,
 * and either may carry a deferred or borrowed bit).  A caller whose stack
 * pointer is NULL (a debug build stores NULL while the frame runs) names
 * no slot: its link is not compared, and the walk is read back twice. */
static void read_backs_stack_refs(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    if (l->fr_stackpointer == FPI_OFF_NONE)
        return;
    assert_true(every_link_comparable(b, 0));
    assert_true(l->executable_tag_mask != 0);
    uint64_t f0 = synth_frame_addr(b->img, 0, 0), f1 = synth_frame_addr(b->img, 0, 1);
    uint64_t tagged = FUNC_OTHER | l->executable_tag_mask;
    memcpy(synth_bytes(b->img, f0 + (uint64_t)l->fr_funcobj, 8), &tagged, 8);
    unsigned want = 1 + FPI_VERIFY_READS_CHECKED, got = lowest_frame_reads(b, 0);
    if (got != want)
        fail_msg("%s: a tagged f_funcobj over its untagged slot: the lowest frame read %u times, expected %u", id, got,
                 want);
    int32_t depth = saved_depth(b, f1);
    assert_true(depth >= 0);
    uint64_t untagged = FUNC_OTHER;
    memcpy(synth_bytes(b->img, f0 + (uint64_t)l->fr_funcobj, 8), &untagged, 8);
    memcpy(synth_bytes(b->img, f1 + (uint64_t)l->fr_localsplus + 8u * (uint64_t)depth, 8), &tagged, 8);
    if ((got = lowest_frame_reads(b, 0)) != want)
        fail_msg("%s: a tagged slot under its untagged f_funcobj: the lowest frame read %u times, expected %u", id,
                 got, want);
    uint64_t null_sp = 0;
    memcpy(synth_bytes(b->img, f1 + (uint64_t)l->fr_stackpointer, 8), &null_sp, 8);
    want = 1 + FPI_VERIFY_READS;
    if ((got = lowest_frame_reads(b, 0)) != want)
        fail_msg("%s: a caller with a NULL stack pointer: the lowest frame read %u times, expected %u", id, got, want);
    chain_sampled(id, b);
    print_message("# %s: stack references compared without tags; a NULL stack pointer leaves the link unchecked\n",
                  id);
}

/* A call made by JIT code leaves the callee's frame, not the function, in
 * the caller's callable slot (_INIT_CALL_PY_EXACT_ARGS then _PUSH_FRAME as
 * two uops of a trace, the frame passed through memory; 3.14+jit): the
 * thread is returned whole, its link not compared, so the walk is read back
 * twice.  It was refused as torn ("a call of another function"). */
static void jit_pushed_frame_in_slot(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    assert_true(every_link_comparable(b, 0));
    uint64_t f0 = synth_frame_addr(b->img, 0, 0), f1 = synth_frame_addr(b->img, 0, 1);
    int32_t depth = saved_depth(b, f1);
    assert_true(depth >= 0);
    uint64_t ref = f0 | l->executable_tag_mask;
    memcpy(synth_bytes(b->img, f1 + (uint64_t)l->fr_localsplus + 8u * (uint64_t)depth, 8), &ref, 8);
    unsigned want = 1 + FPI_VERIFY_READS, got = lowest_frame_reads(b, 0);
    if (got != want)
        fail_msg("%s: the callee's frame in its caller's slot: the lowest frame read %u times, expected %u", id, got,
                 want);
    chain_sampled(id, b);
    print_message("# %s: a frame pushed by JIT code (its address in the caller's slot) is returned, read back twice\n",
                  id);
}

/* 3.14+: a suspended caller's stack pointer that names no slot of its own
 * (unaligned, or below localsplus: FPI_DEPTH_UNKNOWN).  CPython never
 * leaves one (every frame's pointer is set when it is pushed and saved at
 * every call), and two such pointers need not be equal, so the read-back
 * never takes the frame as unchanged: the thread is reported torn, not
 * returned, and is returned again once the pointer names a slot. */
static void unknown_depth_read_back(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    if (l->fr_stackpointer == FPI_OFF_NONE)
        return;
    uint64_t f1 = synth_frame_addr(b->img, 0, 1), sp;
    uint8_t *at = synth_bytes(b->img, f1 + (uint64_t)l->fr_stackpointer, 8);
    memcpy(&sp, at, 8);
    const uint64_t bad[] = {sp + 1u, f1 + (uint64_t)l->fr_localsplus - 8u};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        memcpy(at, &bad[k], 8);
        assert_int_equal(saved_depth(b, f1), FPI_DEPTH_UNKNOWN);
        int rc = fp_session_sample(b->s, b->sm);
        if (rc != FP_E_INCOMPLETE || !strstr(fp_session_get_errmsg(b->s), "a frame it followed changed"))
            fail_msg("%s: a caller whose stack pointer names no slot (%s) was not refused: %d %s", id,
                     k ? "below localsplus" : "unaligned", rc, fp_session_get_errmsg(b->s));
    }
    memcpy(at, &sp, 8);
    chain_sampled(id, b);
    print_message("# %s: a suspended frame whose stack pointer names no slot is refused\n", id);
}

/* Two such threads read back together (the batched path): only the walk
 * with a link not compared is read back a second time. */
static void read_backs_per_walk(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!every_link_comparable(b, 0) || !every_link_comparable(b, 1))
        fail_msg("%s: the callee-function check does not apply to this layout", id);
    top_function_unknown(b, 1);
    unsigned got0 = lowest_frame_reads(b, 0), got1 = lowest_frame_reads(b, 1);
    unsigned want0 = 1 + FPI_VERIFY_READS_CHECKED, want1 = 1 + FPI_VERIFY_READS;
    if (got0 != want0 || got1 != want1)
        fail_msg("%s: two threads, one link not compared in thread 1: their lowest frames read %u and %u times "
                 "in a steady-state sample, expected %u and %u", id, got0, got1, want0, want1);
    print_message("# %s: of two walks read back together, only the one owing it read back again\n", id);
}

/* The scene's thread 1 without the __init__ shim (three frames), as the
 * only thread or as both threads. */
static void build_call_chain_scene(const char *id, size_t nthreads, scene *sc, built *b)
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

static void one_chain_scene(const char *id, scene *sc, built *b)
{
    build_call_chain_scene(id, 1, sc, b);
}

/* Runs body on the one-thread call-chain scene of every layout. */
static void each_chain_scene(scene_case body)
{
    each_scene_made(one_chain_scene, body);
}

static void test_read_backs_per_link(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        for (size_t nthreads = 1; nthreads <= 2; nthreads++) {
            scene sc;
            built b;
            build_call_chain_scene(LAYOUTS[i], nthreads, &sc, &b);
            if (nthreads == 1)
                read_backs_per_link(i, LAYOUTS[i], &b);
            else
                read_backs_per_walk(i, LAYOUTS[i], &b);
            unbuild(&b);
        }
    }
    each_chain_scene(read_backs_stack_refs);
    each_chain_scene(jit_pushed_frame_in_slot);
    each_chain_scene(unknown_depth_read_back);
}

/* A top frame with neither locals nor stack (3.11, 3.12: `def spin():
 * while True: pass`) ends fr_localsplus bytes after its start, short of
 * fr_size, at the data stack's top: its header is what the walk reads, and
 * it is live.  Refused as "beyond the live part" before, such a thread was
 * never sampled, not even stopped. */
static void top_frame_without_slots(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    uint64_t ts = synth_thread_state_addr(b->img, 0), top = synth_frame_addr(b->img, 0, 0) + (uint64_t)l->fr_localsplus;
    memcpy(synth_bytes(b->img, ts + (uint64_t)l->ts_datastack_top, 8), &top, 8);
    for (int k = 0; k < 2; k++) { /* the first read, then the steady state's */
        if (fp_session_sample(b->s, b->sm) != FP_OK)
            fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
        check_thread(id, b->sm, 0, EXPECT_T2, 3);
    }
    print_message("# %s: a top frame of %d header bytes at the data stack's top (fr_size %d)\n", id,
                  (int)l->fr_localsplus, (int)l->fr_size);
}

static void test_top_frame_without_slots(void **state)
{
    (void)state;
    each_chain_scene(top_frame_without_slots);
}

static void test_cycle_at_max_depth(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        scene sc;
        built b;
        build_scene(id, CYCLE_CUT_DEPTH, &sc, &b);
        assert_true(corrupt(&b, C_CYCLE));
        (void)fp_session_sample(b.s, b.sm);
        assert_int_equal(fp_sample_get_thread_count(b.sm), 2);
        int err = fp_sample_get_thread(b.sm, 1)->error;
        if (err != FP_E_CORRUPT) /* FP_E_LIMIT: "deeper than max_depth frames" */
            fail_msg("%s: a loop met at max_depth (%u) was reported as error %d (%s)", id, CYCLE_CUT_DEPTH, err,
                     fp_error_describe(err));
        unbuild(&b);
    }
}

/* A reader that keeps the ranges of its last batched read. */
#define KEPT_RANGES 512u
#define WORD_READ 8u
typedef struct keeping_reader {
    fp_reader inner;
    fp_iov last[KEPT_RANGES];
    size_t nlast;
} keeping_reader;

static int keeping_readv(void *ctx, const fp_iov *iov, size_t n)
{
    keeping_reader *r = ctx;
    r->nlast = n < KEPT_RANGES ? n : KEPT_RANGES;
    memcpy(r->last, iov, r->nlast * sizeof *iov);
    return fp_reader_readv(&r->inner, iov, n);
}

static int keeping_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    fp_iov one = {addr, buf, len};
    return keeping_readv(ctx, &one, 1);
}

static const fp_reader_ops KEEPING_OPS = {.name = "keeping synthetic image", .read = keeping_read,
                                          .readv = keeping_readv};

/* The read-backs read a chunk from its lowest followed frame up: the bytes
 * below it (the chunk's header) decide nothing and are not compared, and
 * with an entry frame between them and the first frame they were a remote
 * range of their own in each read-back.  In steady state only the copy
 * reads them. */
static void chunk_header_read_once(size_t layout, const char *id, built *b)
{
    (void)layout;
    uint64_t below = synth_frame_addr(b->img, 1, 3) - BELOW_LOWEST_FRAME;
    keeping_reader kr = {.inner = b->rd};
    fp_reader rd = {&KEEPING_OPS, &kr};
    reattach(b, &rd);
    fp_read_stats st0, st;
    for (int k = 0; k < 4; k++) { /* the last one: the steady state's one read */
        assert_int_equal(fp_session_get_read_stats(b->s, &st0), FP_OK);
        sample_is(id, b, 1, EXPECT_T2, 3);
    }
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    unsigned hits = 0;
    for (size_t i = 0; i < kr.nlast; i++)
        if (kr.last[i].addr <= below && below - kr.last[i].addr < kr.last[i].len)
            hits++;
    if (st.calls - st0.calls != 1 || hits != 1)
        fail_msg("%s: the bytes below a thread's lowest frame were read %u times in a steady-state sample of %llu "
                 "reads, expected once in one read (the copy)", id, hits, (unsigned long long)(st.calls - st0.calls));
}

static void test_read_back_from_lowest_frame(void **state)
{
    (void)state;
    each_scene(chunk_header_read_once);
}

/* 3.14+: each read-back reads the code-object generation right after the
 * interpreter's list head (the head thread's link), a few hundred bytes
 * before it, so that process_vm_readv takes the two as one remote range;
 * read after the thread states, it was a range of its own. */
static void generation_beside_head(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    if (l->interp_code_generation == FPI_OFF_NONE)
        return;
    uint64_t interp = first_interp(b->img);
    uint64_t head = interp + (uint64_t)l->interp_threads_head, gen = interp + (uint64_t)l->interp_code_generation;
    keeping_reader kr = {.inner = b->rd};
    fp_reader rd = {&KEEPING_OPS, &kr};
    reattach(b, &rd);
    for (int k = 0; k < 4; k++) /* the last one: the steady state's one read */
        sample_is(id, b, 1, EXPECT_T2, 3);
    unsigned beside = 0; /* the copy reads it among the interpreter's other words */
    for (size_t i = 1; i < kr.nlast; i++)
        if (kr.last[i].addr == gen && kr.last[i].len == WORD_READ && kr.last[i - 1].addr == head &&
            kr.last[i - 1].len == WORD_READ)
            beside++;
    if (beside != 2) /* the two read-backs, taken with the first read */
        fail_msg("%s: the generation was read back right after the list head %u times in a steady-state sample, "
                 "expected 2", id, beside);
}

static void test_generation_read_beside_head(void **state)
{
    (void)state;
    each_scene(generation_beside_head);
}

/* The top frame of the first thread runs another function from now on. */
static void top_frame_replaced(racing_reader *r)
{
    const fpi_layout *l = r->l;
    memcpy(synth_bytes(r->img, r->ts + (uint64_t)l->fr_executable, 8),
           synth_bytes(r->img, r->other + (uint64_t)l->fr_executable, 8), 8);
    memcpy(synth_bytes(r->img, r->ts + (uint64_t)l->fr_instr_ptr, 8),
           synth_bytes(r->img, r->other + (uint64_t)l->fr_instr_ptr, 8), 8);
}

/* Samples after which the batched path reads every thread in its one
 * steady-state read.  3.14t and 3.15t need one more: their second sample
 * reads the thread-local bytecode entries fresh between its two read-backs, and a
 * read-back is recorded for reading ahead only while nothing else was read,
 * so the read-back owed after its frames is read ahead from the fourth. */
static int steady_after(const char *id)
{
    return has_tlbc(id) ? 4 : 3;
}

/* The thread's native id changes (as when its state is reused by a new
 * thread): its walk is torn, with every range it read unchanged. */
static void native_id_changed(racing_reader *r)
{
    uint8_t *at = synth_bytes(r->img, r->ts + (uint64_t)r->l->ts_native_thread_id, 8);
    uint64_t id;
    memcpy(&id, at, 8);
    id++;
    memcpy(at, &id, 8);
}

/* A walk torn by a running thread is retried in one read: the thread
 * state, its chunks where the torn attempt found them and, after them,
 * the torn attempt's read-backs (retry_read.c), which the retry's
 * read-backs take in place when they plan the same ranges.  One thread, in
 * its steady state (one read a sample); its thread state changes between
 * the copy and the read-back: the sample makes the torn first read and
 * the retry's one read (3.11, 3.15; read afresh, six on 3.11).  On
 * 3.12-3.14 the retry still reads on its own what the sample's first read
 * brought from the frame cache (a frame outside the data stack), and its
 * read-backs are then read on their own too; with thread-local bytecode
 * (3.14t, 3.15t) the retry resolves that afresh. */
static const unsigned RETRY_SAMPLE_READS[] = {2, 5, 5, 5, 5, 8, 2, 6};

static void retry_in_one_read(size_t layout, const char *id, built *b)
{
    (void)layout;
    uint64_t ts = synth_thread_state_addr(b->img, 0);
    racing_reader rr = racing_over(b, ts, native_id_changed);
    rr.ts = ts;
    fp_reader racing = {&RACING_OPS, &rr};
    reattach(b, &racing);
    retry_heard heard = {0, 0};
    assert_int_equal(fp_session_set_retry_hook(b->s, on_retry, &heard), FP_OK);
    assert_int_equal(fp_session_set_retry_hook(NULL, on_retry, &heard), FP_E_INVALID_ARG);
    fp_retry_hook got = NULL;
    void *got_ctx = NULL;
    assert_int_equal(fp_session_get_retry_hook(b->s, &got, &got_ctx), FP_OK);
    assert_ptr_equal(got, on_retry);
    assert_ptr_equal(got_ctx, &heard);
    assert_int_equal(fp_session_get_retry_hook(NULL, &got, &got_ctx), FP_E_INVALID_ARG);
    assert_int_equal(fp_session_get_retry_hook(b->s, NULL, &got_ctx), FP_E_INVALID_ARG);
    assert_int_equal(fp_session_get_retry_hook(b->s, &got, NULL), FP_E_INVALID_ARG);
    fp_read_stats st0, st;
    for (int k = 0; k < steady_after(id); k++) {
        assert_int_equal(fp_session_get_read_stats(b->s, &st0), FP_OK);
        if (fp_session_sample(b->s, b->sm) != FP_OK)
            fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    }
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    if (st.calls - st0.calls != 1)
        fail_msg("%s: %llu reads in the steady state, not one", id, (unsigned long long)(st.calls - st0.calls));
    uint64_t before = fp_sample_get_thread(b->sm, 0)->native_id;
    rr.armed = true;
    rr.skip = 1; /* the copy reads the thread state; the change comes before the read-back */
    st0 = st;
    if (fp_session_sample(b->s, b->sm) != FP_OK)
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    assert_false(rr.armed);
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    if (st.torn - st0.torn != 1 || st.calls - st0.calls != RETRY_SAMPLE_READS[layout])
        fail_msg("%s: a walk torn once: %llu torn, %llu reads in the sample, expected 1 and %u", id,
                 (unsigned long long)(st.torn - st0.torn), (unsigned long long)(st.calls - st0.calls),
                 RETRY_SAMPLE_READS[layout]);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->error, FP_OK);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->frame_count, 3);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->native_id, before + 1);
    /* The hook heard of the torn walk once, before its retry, with the
     * thread's native id as the torn walk read it; of nothing before. */
    if (heard.calls != 1 || heard.native_id != before)
        fail_msg("%s: the retry hook was called %u times (last with native id %llu), expected once with %llu", id,
                 heard.calls, (unsigned long long)heard.native_id, (unsigned long long)before);
    assert_int_equal(fp_session_set_retry_hook(b->s, NULL, &heard), FP_OK);
    assert_int_equal(fp_session_get_retry_hook(b->s, &got, &got_ctx), FP_OK); /* removed: no context kept either */
    assert_null(got);
    assert_null(got_ctx);
    reattach(b, &b->rd);
    print_message("# %s: a torn walk retried in one read, its read-back taken from it\n", id);
}

static void test_retry_in_one_read(void **state)
{
    (void)state;
    each_chain_scene(retry_in_one_read);
}

/* Threads read ahead are read back together, in one batch; a thread that
 * changed between its copy and that read-back must not be returned as it
 * was copied: the sample is walked again, thread by thread, and gives what
 * the thread runs now.  After one sample the read-backs are read on their
 * own; in the steady state (steady_after), with the sample's first read,
 * right after the copy (readback_ahead.c: the whole sample is that one
 * read): the change lands between the two inside that read. */
static void test_batched_read_back_torn(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        const int steady = steady_after(id);
        for (int warm = 1; warm <= steady; warm += steady - 1) {
            scene sc;
            built b;
            build_scene(id, 0, &sc, &b);
            racing_reader rr = racing_over(&b, synth_frame_addr(b.img, 0, 0), top_frame_replaced);
            rr.ts = rr.watch;
            rr.other = synth_frame_addr(b.img, 0, 3);
            fp_reader racing = {&RACING_OPS, &rr};
            reattach(&b, &racing);
            retry_heard heard = {0, 0};
            assert_int_equal(fp_session_set_retry_hook(b.s, on_retry, &heard), FP_OK);
            fp_read_stats st, st0;
            for (int k = 0; k < warm; k++) { /* the next one reads both threads ahead */
                assert_int_equal(fp_session_get_read_stats(b.s, &st0), FP_OK);
                sample_is(id, &b, 0, EXPECT_T1, 4);
            }
            assert_int_equal(fp_session_get_read_stats(b.s, &st), FP_OK);
            if (warm == steady && STEADY_READS[i] == 1 && st.calls - st0.calls != 1)
                fail_msg("%s: the last sample before the change made %llu reads, not the one read of a steady "
                         "state", id, (unsigned long long)(st.calls - st0.calls));
            rr.armed = true;
            rr.skip = 1; /* the copy reads the frame; the change comes before the read-back */
            if (fp_session_sample(b.s, b.sm))
                fail_msg("%s (after %d samples): %s", id, warm, fp_session_get_errmsg(b.s));
            assert_false(rr.armed);
            assert_int_equal(fp_session_get_read_stats(b.s, &st), FP_OK);
            if (st.torn != 1)
                fail_msg("%s (after %d samples): %llu torn walks counted, expected the one the change tore", id,
                         warm, (unsigned long long)st.torn);
            expect_frame ex[4];
            memcpy(ex, EXPECT_T1, sizeof ex);
            ex[0] = (expect_frame){&CODE_UCS2, 0, 0, false};
            check_thread(id, b.sm, 0, ex, 4);
            check_thread(id, b.sm, 1, EXPECT_T2, 3);
            /* Torn in the batch or on its own, the thread's retry was
             * announced once, with its native id. */
            if (heard.calls != 1 || heard.native_id != fp_sample_get_thread(b.sm, 0)->native_id)
                fail_msg("%s (after %d samples): the retry hook was called %u times (last with native id %llu), "
                         "expected once with %llu", id, warm, heard.calls, (unsigned long long)heard.native_id,
                         (unsigned long long)fp_sample_get_thread(b.sm, 0)->native_id);
            unbuild(&b);
        }
    }
}

/* A code object's thread-local copies move to a new array (CPython
 * replaces co_tlbc when a thread with a higher index needs a copy), with a
 * new copy for the frame's index there, the old array left as it was: the
 * frame's position is found through the new array.  The new copy lies
 * TLBC_SHIFT units before the old one (the walk reads no copy's bytes), so
 * that the old array's entry, which the first read reads again where the
 * last sample found it, would put the frame TLBC_SHIFT units further on,
 * on another line, and nothing would look wrong. */
#define TLBC_IDX 3
#define TLBC_SHIFT 8u
static void tlbc_array_moved(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!has_tlbc(id))
        return;
    for (int k = 0; k < 3; k++)
        sample_is(id, b, 1, EXPECT_T2, 3);
    const fpi_layout *l = synth_layout(b->img);
    uint64_t f = synth_frame_addr(b->img, 1, 0), code, arr, size, old;
    memcpy(&code, synth_bytes(b->img, f + (uint64_t)l->fr_executable, 8), 8);
    code &= ~l->executable_tag_mask;
    memcpy(&arr, synth_bytes(b->img, code + (uint64_t)l->co_tlbc, 8), 8);
    memcpy(&size, synth_bytes(b->img, arr, 8), 8);
    memcpy(&old, synth_bytes(b->img, arr + 8 * (1 + TLBC_IDX), 8), 8);
    uint64_t unit = (uint64_t)(loc_start(&CODE_UCS4, 1) + 7), copy = old - 2 * TLBC_SHIFT;
    uint64_t moved = synth_alloc(b->img, 8 * (1 + size));
    assert_true(moved != 0);
    memcpy(synth_bytes(b->img, moved, 8 * (1 + size)), synth_bytes(b->img, arr, 8 * (1 + size)), 8 * (1 + size));
    memcpy(synth_bytes(b->img, moved + 8 * (1 + TLBC_IDX), 8), &copy, 8);
    memcpy(synth_bytes(b->img, code + (uint64_t)l->co_tlbc, 8), &moved, 8);
    uint64_t instr = copy + 2 * unit;
    memcpy(synth_bytes(b->img, f + (uint64_t)l->fr_instr_ptr, 8), &instr, 8);
    for (int k = 0; k < 2; k++) /* through the new array, then reading it ahead */
        sample_is(id, b, 1, EXPECT_T2, 3);
}

static void test_tlbc_array_moved(void **state)
{
    (void)state;
    each_scene(tlbc_array_moved);
}

/* A read-back whose ranges are not those of the last sample's is read,
 * not taken from the ranges read ahead: here the first thread's data-stack
 * top moves up a word between two samples (a deeper stack moves it more),
 * so its chunk is read back a word longer.  Taken from the ranges read
 * ahead, every range after that chunk would be compared a word off, and
 * the walk torn for nothing (or, with no match required, worse). */
static void moved_ranges_read_back(size_t layout, const char *id, built *b)
{
    for (int k = 0; k < 3; k++)
        assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    const fpi_layout *l = synth_layout(b->img);
    uint8_t *top = synth_bytes(b->img, synth_thread_state_addr(b->img, 0) + (uint64_t)l->ts_datastack_top, 8);
    uint64_t v;
    memcpy(&v, top, 8);
    v += 8;
    memcpy(top, &v, 8);
    fp_read_stats st0, st;
    assert_int_equal(fp_session_get_read_stats(b->s, &st0), FP_OK);
    if (fp_session_sample(b->s, b->sm))
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    assert_int_equal(fp_session_get_read_stats(b->s, &st), FP_OK);
    if (st.torn != 0)
        fail_msg("%s: %llu walks found torn; nothing changed during the sample", id,
                 (unsigned long long)st.torn);
    /* After reads of their own, thread-local bytecode is resolved afresh
     * (tlbc_ahead.c): three reads more on 3.14t and 3.15t. */
    unsigned tlbc = has_tlbc(id) ? 3u : 0u;
    if (st.calls - st0.calls != STEADY_READS[layout] + 2 + tlbc)
        fail_msg("%s: %llu reads, expected the steady state's %u, two read-backs of its own and %u for thread-local "
                 "bytecode", id, (unsigned long long)(st.calls - st0.calls), STEADY_READS[layout], tlbc);
}

static void test_read_back_ahead_ranges_moved(void **state)
{
    (void)state;
    each_scene(moved_ranges_read_back);
}

/* 3.13: the caller under the first thread's top returns between the copy
 * and the read-back (its stack depth cleared, the rest of its slot as it
 * was). */
static void caller_cleared(racing_reader *r)
{
    uint32_t zero = 0;
    memcpy(synth_bytes(r->img, r->watch + (uint64_t)r->l->fr_stacktop, 4), &zero, 4);
}

/* A suspended frame's stack depth is read back with it (3.11-3.13): a
 * caller copied in use and read back cleared (3.13) has returned, and the
 * thread is torn, not returned with it (a read-back that skips the depth
 * passes it).  (The top's depth is not read back: it changes whenever the
 * top calls, and the walk checks the copy's.) */
static void test_cleared_between_reads(void **state)
{
    (void)state;
    int checked = 0;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        scene sc;
        built b;
        build_scene(id, 0, &sc, &b);
        racing_reader rr = racing_over(&b, synth_frame_addr(b.img, 0, 2), caller_cleared);
        if (rr.l->co_nlocalsplus == FPI_OFF_NONE) {
            unbuild(&b);
            continue;
        }
        fp_reader racing = {&RACING_OPS, &rr};
        reattach(&b, &racing);
        assert_int_equal(fp_session_sample(b.s, b.sm), FP_OK);
        rr.armed = true;
        rr.skip = 1; /* the copy reads the caller in use; it returns before the read-back */
        int rc = fp_session_sample(b.s, b.sm);
        assert_false(rr.armed);
        if (rc == FP_OK && fp_sample_get_thread(b.sm, 0)->error == 0)
            fail_msg("%s: a caller that returned under the walk was returned as part of the stack", id);
        assert_int_equal(fp_sample_get_thread(b.sm, 0)->error, FP_E_INCOMPLETE);
        check_thread(id, b.sm, 1, EXPECT_T2, 3);
        unbuild(&b);
        checked++;
    }
    assert_int_equal(checked, 2); /* 3.13 and 3.13t */
}

static const synth_code CODE_WAITING = {
    "waiting", "waiting", "/app/w.py", 20, {{2, 21, 21, 0, 5}, {2, 22, 22, 4, 9}}, 2, false, 0};

/* A thread of the standard scene whose top frame is a generator's of
 * CODE_WAITING at unit 2, resumed from C (an entry frame below it), the
 * rest of the first thread's frames under it; `alone`: that frame is the
 * thread's only one. */
static void waiting_scene(const char *id, bool alone, scene *sc, built *b)
{
    describe(id, sc);
    sc->t1[0] = (synth_frame){&CODE_WAITING, loc_start(&CODE_WAITING, 1), true, true, 0};
    if (alone)
        sc->th[0].nframes = 1;
    build(id, &sc->d, 0, b);
}

static void waiting_linked(const char *id, scene *sc, built *b)
{
    waiting_scene(id, false, sc, b);
}

static void waiting_alone(const char *id, scene *sc, built *b)
{
    waiting_scene(id, true, sc, b);
}

/* Rewrites the code of thread 0's top frame to hold, at the frame's unit
 * and nowhere else, a wait opcode (YIELD_VALUE or RETURN_GENERATOR;
 * `wait`) or one that no call site or wait is; returns the frame. */
static uint64_t top_at_op(built *b, bool wait)
{
    unsigned minor = 0;
    const fpi_call_site_set *set = image_call_sites(b, &minor);
    assert_non_null(set);
    int op = -1;
    for (int v = 0; v < 256 && op < 0; v++) {
        bool waits = op_in(set->wait_ops, v) || (v > 0 && op_in(set->wait_ops, v - 1));
        if (set->caches[v] == 0 && (wait ? op_in(set->wait_ops, v) : v != set->cache && !waits && !op_in(set->ops, v)))
            op = v;
    }
    assert_true(op >= 0);
    uint64_t f = synth_frame_addr(b->img, 0, 0), start, unit, units;
    wipe_code(b, f, &start, &unit, &units);
    *synth_bytes(b->img, start + 2 * unit, 1) = (uint8_t)op;
    return f;
}

/* 3.11-3.13 (a frame keeps its stack depth): the top frame of thread 0
 * (a generator's) stopped with a stack depth at a wait opcode (YIELD_VALUE
 * or RETURN_GENERATOR; `wait`) or at another one that no call site or
 * wait is: its code holds that opcode at its unit and nothing else.
 * False on a layout without a stack depth. */
static bool stop_at(built *b, bool wait)
{
    const fpi_layout *l = synth_layout(b->img);
    unsigned minor = 0;
    if (l->fr_stacktop == FPI_OFF_NONE || !image_call_sites(b, &minor))
        return false;
    uint64_t f = top_at_op(b, wait);
    uint32_t depth = 3;
    memcpy(synth_bytes(b->img, f + (uint64_t)l->fr_stacktop, 4), &depth, 4);
    return true;
}

static void waiting_passes(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!stop_at(b, true))
        return;
    if (fp_session_sample(b->s, b->sm) != FP_OK || fp_sample_get_thread(b->sm, 0)->error != 0)
        fail_msg("%s: a generator waiting at its yield, the top, was refused: %s", id, fp_session_get_errmsg(b->s));
    const expect_frame waiting[] = {{&CODE_WAITING, 1, 2, true}, EXPECT_T1[1], EXPECT_T1[2], EXPECT_T1[3]};
    check_thread(id, b->sm, 0, waiting, 4);
    print_message("# %s: a generator waiting at its yield, the top above a frame, passes\n", id);
}

static void elsewhere_refused(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!stop_at(b, false))
        return;
    (void)fp_session_sample(b->s, b->sm);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->error, FP_E_INCOMPLETE);
    assert_non_null(strstr(fp_session_get_errmsg(b->s), "the top, is not running"));
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
}

static void alone_refused(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!stop_at(b, true))
        return;
    (void)fp_session_sample(b->s, b->sm);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->error, FP_E_INCOMPLETE);
    if (!strstr(fp_session_get_errmsg(b->s), "ended at generator frame") &&
        !strstr(fp_session_get_errmsg(b->s), "the top, is not running"))
        fail_msg("%s: a lone generator's frame waiting at its yield: %s", id, fp_session_get_errmsg(b->s));
}

/* 3.11-3.13: a generator's frame at the top with its stack depth saved,
 * at the instruction where it waits to be resumed (YIELD_VALUE or
 * RETURN_GENERATOR) and linked above a frame, is a generator being
 * resumed from C code or yielding back to it: an exact stack.  At any
 * other instruction it is refused as a frame that is not running (the
 * check without the exception refused the first case); with no frame
 * below it (a generator that finished yielding and was unlinked) it is
 * refused too, as a chain that ends at a generator's frame. */
static void test_waiting_generator_top(void **state)
{
    (void)state;
    each_scene_made(waiting_linked, waiting_passes);
    each_scene_made(waiting_linked, elsewhere_refused);
    each_scene_made(waiting_alone, alone_refused);
}

static const synth_code CODE_POPPED = {
    "popped", "popped", "/app/p.py", 30, {{2, 31, 31, 0, 5}, {2, 32, 32, 4, 9}}, 2, false, 0};

/* The standard scene with thread 0's top frame a function's of a code of
 * its own, CODE_POPPED at unit 2 (popped_top rewrites its bytecode). */
static void popped_scene(const char *id, scene *sc, built *b)
{
    describe(id, sc);
    sc->t1[0] = (synth_frame){&CODE_POPPED, loc_start(&CODE_POPPED, 1), false, false, 0};
    build(id, &sc->d, 0, b);
}

/* Thread 0's top frame (a function's, in the data stack) at an opcode
 * that is a wait (`wait`: RETURN_GENERATOR's family) or one that no call
 * site or wait is, the data stack's top lowered to that frame: a frame
 * its thread has popped and not yet left (RETURN_GENERATOR, chain.c). */
static void popped_top(built *b, bool wait)
{
    const fpi_layout *l = synth_layout(b->img);
    uint64_t f = top_at_op(b, wait);
    if (l->fr_stacktop != FPI_OFF_NONE) { /* RETURN_GENERATOR saves an empty stack: its locals only */
        uint64_t code;
        uint32_t depth = 0;
        memcpy(&code, synth_bytes(b->img, f + (uint64_t)l->fr_executable, 8), 8);
        if (l->co_nlocalsplus != FPI_OFF_NONE)
            memcpy(&depth, synth_bytes(b->img, (code & ~l->executable_tag_mask) + (uint64_t)l->co_nlocalsplus, 4), 4);
        memcpy(synth_bytes(b->img, f + (uint64_t)l->fr_stacktop, 4), &depth, 4);
    }
    uint64_t ts = synth_thread_state_addr(b->img, 0);
    memcpy(synth_bytes(b->img, ts + (uint64_t)l->ts_datastack_top, 8), &f, 8);
}

/* A stopped thread (its walk one instant: blocking, taken here on an
 * image by walking with the option on) whose top frame lies exactly at its
 * data stack's top is popping it, at RETURN_GENERATOR: its stack is
 * exact, the top included (refused as "beyond the live part" before, the
 * thread was left out of every blocking sample taken in that instant:
 * 3.13's test suite lost about 1 % of its thread samples).  Unstopped, the
 * same bytes are a frame read after its thread left it (refused); stopped
 * at another instruction, it is refused too (3.11's RETURN_VALUE has the
 * instant after the frame was cleared). */
static void popped_top_passes_stopped(size_t layout, const char *id, built *b)
{
    (void)layout;
    popped_top(b, true);
    (void)fp_session_sample(b->s, b->sm);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->error, FP_E_INCOMPLETE);
    assert_non_null(strstr(fp_session_get_errmsg(b->s), "beyond the live part"));
    b->s->opts.blocking = true;
    if (fpi_walk_all(b->s, b->sm) != FP_OK || fp_sample_get_thread(b->sm, 0)->error != 0)
        fail_msg("%s: a stopped thread popping its top at RETURN_GENERATOR was refused: %s", id,
                 fp_session_get_errmsg(b->s));
    const expect_frame popped[] = {{&CODE_POPPED, 1, 2, false}, EXPECT_T1[1], EXPECT_T1[2], EXPECT_T1[3]};
    check_thread(id, b->sm, 0, popped, 4);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
    print_message("# %s: a stopped thread's top frame at its data stack's top, at RETURN_GENERATOR, passes\n", id);
}

static void popped_top_elsewhere_refused(size_t layout, const char *id, built *b)
{
    (void)layout;
    popped_top(b, false);
    b->s->opts.blocking = true;
    (void)fpi_walk_all(b->s, b->sm);
    assert_int_equal(fp_sample_get_thread(b->sm, 0)->error, FP_E_INCOMPLETE);
    if (!strstr(fp_session_get_errmsg(b->s), "only a frame that RETURN_GENERATOR pops"))
        fail_msg("%s: a stopped thread's top at its data stack's top at another instruction: %s", id,
                 fp_session_get_errmsg(b->s));
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
}

static void test_popped_top_stopped(void **state)
{
    (void)state;
    each_scene_made(popped_scene, popped_top_passes_stopped);
    each_scene_made(popped_scene, popped_top_elsewhere_refused);
}

/* 3.11-3.13: a top frame seen running, then stopped at no call (it has
 * returned) at the same instruction, is torn though the frame cache knows
 * the frame: the check comes before the cache (a first version ran it
 * after, and the cache's hit returned the frame). */
static void test_stopped_top_from_cache(void **state)
{
    (void)state;
    int checked = 0;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        scene sc;
        built b;
        build_scene(id, 0, &sc, &b);
        const fpi_layout *l = synth_layout(b.img);
        if (l->fr_stacktop == FPI_OFF_NONE) {
            unbuild(&b);
            continue;
        }
        /* The second thread's top has a code object of its own: at no call. */
        uint64_t top = synth_frame_addr(b.img, 1, 0), start, unit, units;
        wipe_code(&b, top, &start, &unit, &units);
        assert_int_equal(fp_session_sample(b.s, b.sm), FP_OK);
        assert_int_equal(fp_sample_get_thread(b.sm, 1)->error, 0);
        uint32_t depth = 2;
        memcpy(synth_bytes(b.img, top + (uint64_t)l->fr_stacktop, 4), &depth, 4);
        (void)fp_session_sample(b.s, b.sm);
        assert_int_equal(fp_sample_get_thread(b.sm, 1)->error, FP_E_INCOMPLETE);
        check_thread(id, b.sm, 0, EXPECT_T1, 4);
        unbuild(&b);
        checked++;
    }
    assert_int_equal(checked, 4); /* 3.11, 3.12, 3.13, 3.13t */
}

/* The callee-kind check holds for a caller taken from the frame cache,
 * whose key does not hold its callee's kind: thread 1's frame 2 at SEND or
 * FOR_ITER under frame 1 made a generator's frame is a generator resumed,
 * sampled and cached; with frame 1 a function's frame again, frame 2's key
 * is the same and the sample must still be refused (3.12+). */
static void resuming_caller_refused_from_cache(size_t layout, const char *id, built *b)
{
    (void)layout;
    if (!corrupt(b, C_RESUMING_CALLER))
        return;
    const fpi_layout *l = synth_layout(b->img);
    uint8_t *owner = synth_bytes(b->img, synth_frame_addr(b->img, 1, 1) + (uint64_t)l->fr_owner, 1);
    uint8_t function_owner = *owner;
    *owner = (uint8_t)l->owner_generator;
    if (fp_session_sample(b->s, b->sm) != FP_OK || fp_sample_get_thread(b->sm, 1)->error != 0)
        fail_msg("%s: a caller at SEND under a generator's frame was refused: %s", id, fp_session_get_errmsg(b->s));
    uint64_t hits = b->s->fc.hits;
    *owner = function_owner;
    (void)fp_session_sample(b->s, b->sm);
    if (fp_sample_get_thread(b->sm, 1)->error != FP_E_INCOMPLETE)
        fail_msg("%s: a cached caller at SEND under a function's frame was not refused", id);
    assert_non_null(strstr(fp_session_get_errmsg(b->s), "resuming a generator under a frame"));
    assert_true(b->s->fc.hits > hits);
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
    print_message("# %s: a cached caller at SEND under a function's frame is refused\n", id);
}

static void test_resuming_caller_from_cache(void **state)
{
    (void)state;
    each_scene(resuming_caller_refused_from_cache);
}

/* Thread 1 with its frame 1 made a generator's frame directly above frame
 * 2 (visible now, at its unit 1 with no position). */
static const expect_frame EXPECT_T2_GENERATOR[] = {
    {&CODE_UCS4, 1, 15, false}, {&CODE_SHIM, 0, 1, true}, {&CODE_A, 4, 10, false}, {&CODE_A, 3, 7, false}};

/* Makes thread 1's frame 1 a generator's frame (or a function's again). */
static void frame1_generator(built *b, bool generator)
{
    const fpi_layout *l = synth_layout(b->img);
    *synth_bytes(b->img, synth_frame_addr(b->img, 1, 1) + (uint64_t)l->fr_owner, 1) =
        (uint8_t)(generator ? l->owner_generator : l->owner_thread);
}

/* Thread 1's frame 1, a generator's, waits in a `yield from`: at the RESUME
 * after it (3.13+), or at the YIELD_VALUE before that RESUME (3.12), the
 * RESUME's operand saying it resumes after a delegation (the value 2). */
static bool frame1_delegating(built *b, const fpi_call_site_set *set, unsigned minor)
{
    int op = -1;
    for (int v = 0; v < 256 && op < 0; v++)
        if (op_in(set->gen_ops, v) && set->caches[v] == 0)
            op = v;
    uint64_t start, unit, units;
    wipe_code(b, synth_frame_addr(b->img, 1, 1), &start, &unit, &units);
    uint64_t resume = minor < SUSPENDED_AT_INSTRUCTION_MINOR ? unit + 1 : unit;
    if (op < 0 || resume >= units)
        return false;
    *synth_bytes(b->img, start + 2 * unit, 1) = (uint8_t)op;
    *synth_bytes(b->img, start + 2 * resume, 1) = (uint8_t)op;
    *synth_bytes(b->img, start + 2 * resume + 1, 1) = 2;
    frame1_generator(b, true);
    return true;
}

/* Thread 1's top word names `frame`. */
static void set_top(built *b, uint64_t frame)
{
    const fpi_layout *l = synth_layout(b->img);
    uint64_t ts = synth_thread_state_addr(b->img, 1), word;
    if (l->ts_current_frame != FPI_OFF_NONE) {
        word = ts + (uint64_t)l->ts_current_frame;
    } else {
        memcpy(&word, synth_bytes(b->img, ts + (uint64_t)l->ts_cframe, 8), 8);
        word += (uint64_t)l->cframe_current_frame;
    }
    memcpy(synth_bytes(b->img, word, 8), &frame, 8);
}

static void expect_resumed_refused(const char *id, built *b, const char *what)
{
    int rc = fp_session_sample(b->s, b->sm);
    if (rc != FP_E_INCOMPLETE ||
        !strstr(fp_session_get_errmsg(b->s), "is not suspended resuming a generator under the"))
        fail_msg("%s: %s was not refused as torn: %d %s", id, what, rc, fp_session_get_errmsg(b->s));
    assert_int_equal(fp_sample_get_thread(b->sm, 1)->frame_count, 0);
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
}

/* A generator's frame directly above a frame was linked there by it: at
 * SEND or FOR_ITER (3.12+), or by its call of gen.throw(), below a
 * generator waiting in a `yield from` with a frame above it.  Thread 1's
 * frame 2 at a call under its frame 1 made a generator's frame is refused
 * on a cold walk and through the frame cache (whose key holds neither
 * frame's kind); at SEND or FOR_ITER, or under a delegating generator that
 * is not the top, it passes; under that generator as the top, it is
 * refused. */
static void generator_callee_checked(size_t layout, const char *id, built *b)
{
    (void)layout;
    unsigned minor;
    const fpi_call_site_set *set = image_call_sites(b, &minor);
    uint64_t f1 = synth_frame_addr(b->img, 1, 1), f2 = synth_frame_addr(b->img, 1, 2);
    assert_true(set && suspend_in(b, f2, set, minor, pushing_opcode(set, false)));
    sample_is(id, b, 1, EXPECT_T2, 3); /* under a function's frame: warms the frame cache */
    uint64_t hits = b->s->fc.hits;
    frame1_generator(b, true);
    expect_resumed_refused(id, b, "a cached caller at a call under a generator's frame");
    assert_true(b->s->fc.hits > hits);
    reattach(b, &b->rd);
    expect_resumed_refused(id, b, "a caller at a call under a generator's frame");
    if (minor >= SEND_DIRECT_FIRST_MINOR) {
        reattach(b, &b->rd);
        assert_true(suspend_in(b, f2, set, minor, pushing_opcode(set, true)));
        sample_is(id, b, 1, EXPECT_T2_GENERATOR, 4);
        reattach(b, &b->rd);
        assert_true(suspend_in(b, f2, set, minor, pushing_opcode(set, false)) && frame1_delegating(b, set, minor));
        sample_is(id, b, 1, EXPECT_T2_GENERATOR, 4);
        set_top(b, f1);
        reattach(b, &b->rd);
        expect_resumed_refused(id, b, "a caller of gen.throw() under a delegating generator at the top");
    }
    print_message("# %s: a caller at a call under a generator's frame is refused\n", id);
}

static void test_generator_callee_resumed(void **state)
{
    (void)state;
    each_scene(generator_callee_checked);
}

/* A read-back takes a chain in its order from the bottom, every caller
 * just before its callee: in the first thread (its generator frame, frame
 * 2, outside the data stack, between frame 3 below it and frame 1 above it
 * in the chunk) the generator frame is read right after the chunk bytes up
 * to frame 1 and right before those from frame 1 on.  Read after the whole
 * chunk (as before), a coroutine that had moved on to its next call was
 * read under the callee of its last one (ci/live generator_pingpong, 3.13). */
static void read_back_in_chain_order(size_t layout, const char *id, built *b)
{
    (void)layout;
    const fpi_layout *l = synth_layout(b->img);
    uint64_t gen = synth_frame_addr(b->img, 0, 2), below = synth_frame_addr(b->img, 0, 3);
    uint64_t above = synth_frame_addr(b->img, 0, 1), pre = fpi_outside_prefix(l);
    read_log *lr = calloc(1, sizeof *lr);
    assert_non_null(lr);
    counting_reader cr = {.inner = b->rd, .log = lr};
    fp_reader logging = {&COUNTING_OPS, &cr};
    reattach(b, &logging);
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK);
    lr->n = 0;
    sample_is(id, b, 0, EXPECT_T1, 4);
    /* Around each read of the generator frame, the nearest reads that are
     * not of a whole frame (other frames outside the chunk, as an entry
     * frame above it on 3.12+, may come between) are chunk bytes. */
    uint64_t whole = pre + (uint64_t)l->fr_size;
    unsigned in_order = 0;
    for (size_t k = 0; k < lr->n; k++) {
        if (lr->addr[k] != gen - pre || lr->len[k] != whole)
            continue;
        size_t kb = k, ka = k;
        while (kb > 0 && lr->len[kb] == whole)
            kb--;
        while (ka + 1 < lr->n && lr->len[ka] == whole)
            ka++;
        bool before = lr->addr[kb] <= below && lr->addr[kb] + lr->len[kb] == above;
        bool after = lr->addr[ka] == above;
        if (!before || !after)
            fail_msg("%s: the generator frame read between 0x%llx+%llu and 0x%llx+%llu, not between its caller's "
                     "and its callee's chunk bytes",
                     id, (unsigned long long)lr->addr[kb], (unsigned long long)lr->len[kb],
                     (unsigned long long)lr->addr[ka], (unsigned long long)lr->len[ka]);
        in_order++;
    }
    if (in_order != FPI_VERIFY_READS)
        fail_msg("%s: the generator frame read back %u times in chain order, expected %u", id, in_order,
                 FPI_VERIFY_READS);
    free(lr);
}

static void test_read_back_in_chain_order(void **state)
{
    (void)state;
    each_scene(read_back_in_chain_order);
}

/* The read fails, as a read of memory just unmapped does. */
static void read_fails(racing_reader *r)
{
    r->fail = FP_E_READ;
}

/* A batched read-back that cannot be read at all blames no thread: the
 * sample is walked again thread by thread and is whole (a regression: the
 * batch took the failure for the walk at index SIZE_MAX). */
static void unreadable_batch_walked_again(size_t layout, const char *id, built *b)
{
    (void)layout;
    racing_reader rr = racing_over(b, synth_frame_addr(b->img, 0, 0), read_fails);
    fp_reader racing = {&RACING_OPS, &rr};
    reattach(b, &racing);
    assert_int_equal(fp_session_sample(b->s, b->sm), FP_OK); /* the next one reads both threads ahead */
    rr.armed = true;
    rr.skip = 1; /* the copy reads the frame; the first read-back fails */
    if (fp_session_sample(b->s, b->sm))
        fail_msg("%s: %s", id, fp_session_get_errmsg(b->s));
    assert_false(rr.armed);
    check_thread(id, b->sm, 0, EXPECT_T1, 4);
    check_thread(id, b->sm, 1, EXPECT_T2, 3);
}

static void test_batched_read_back_unreadable(void **state)
{
    (void)state;
    each_scene(unreadable_batch_walked_again);
}

/* A reader that fails every read touching [lo, hi), as reads of memory
 * unmapped under the unwinder do. */
typedef struct hole_reader {
    fp_reader inner;
    uint64_t lo, hi;
} hole_reader;

static int hole_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    hole_reader *r = ctx;
    if (addr < r->hi && r->lo < addr + len)
        return FP_E_READ;
    return fp_reader_read(&r->inner, addr, buf, len);
}

static const fp_reader_ops HOLE_OPS = {.name = "synthetic image with a hole", .read = hole_read};

/* A code object whose instructions cannot be read: in a live process
 * (the target's pid given) no frame of it is resolved, as the call-site
 * check cannot apply (an entry kept without them let every later frame of
 * that code object past the check): its thread is torn.  A memory image
 * (no pid), which need not record instructions, is unwound without the
 * check for that code object. */
static void test_unreadable_instructions(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        for (int live = 0; live < 2; live++) {
            scene sc;
            built b;
            build_scene(id, 0, &sc, &b);
            const fpi_layout *l = synth_layout(b.img);
            uint64_t caller = synth_frame_addr(b.img, 0, 1), code; /* called the top frame directly */
            memcpy(&code, synth_bytes(b.img, caller + (uint64_t)l->fr_executable, 8), 8);
            code &= ~l->executable_tag_mask;
            hole_reader hr = {b.rd, code + (uint64_t)l->co_code_adaptive, code + (uint64_t)l->co_code_adaptive + 2};
            fp_reader holed = {&HOLE_OPS, &hr};
            fp_target_desc td;
            synth_target(b.img, &td);
            td.pid = live ? (int)getpid() : 0;
            fp_session_free(b.s);
            fp_options o;
            fp_options_init(&o);
            assert_int_equal(fp_session_new(&o, &b.s), FP_OK);
            assert_int_equal(fp_session_attach_reader(b.s, &holed, &td), FP_OK);
            for (int k = 0; k < 2; k++) { /* the second sample must not find it cached */
                int rc = fp_session_sample(b.s, b.sm);
                if (!live) {
                    if (rc)
                        fail_msg("%s, image: %s", id, fp_session_get_errmsg(b.s));
                    check_thread(id, b.sm, 0, EXPECT_T1, 4);
                    continue;
                }
                if (rc != FP_E_INCOMPLETE || fp_sample_get_thread(b.sm, 0)->error != FP_E_INCOMPLETE)
                    fail_msg("%s, live, sample %d: %s (thread error %d), expected the thread torn", id, k,
                             fp_error_describe(rc), fp_sample_get_thread(b.sm, 0)->error);
                assert_non_null(strstr(fp_session_get_errmsg(b.s), "cannot be read"));
                check_thread(id, b.sm, 1, EXPECT_T2, 3);
            }
            unbuild(&b);
        }
    }
}

/* A thread state created by the main thread for a thread that has not
 * started yet carries the main thread's ids (3.11: both thread id and
 * native id): only the interpreter's threads.main is the main thread (the
 * ids alone made such a state a second, frameless main thread, seen live
 * on 3.11 thread_churn). */
static void test_new_thread_with_main_ids(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        synth_frame main_frames[] = {{&CODE_A, 0, false, false, 0}};
        synth_thread th[] = {{4242, 0x7f0000001000ull, false, NULL, 0},
                             {4242, 0x7f0000001000ull, true, main_frames, 1}};
        synth_desc d = {th, 2, NULL, 0};
        built b;
        build(id, &d, 0, &b);
        if (fp_session_sample(b.s, b.sm))
            fail_msg("%s: %s", id, fp_session_get_errmsg(b.s));
        size_t mains = 0;
        for (size_t k = 0; k < fp_sample_get_thread_count(b.sm); k++) {
            const fp_thread *t = fp_sample_get_thread(b.sm, k);
            if (t->main && t->frame_count != 1)
                fail_msg("%s: thread %zu (%zu frames) taken for the main thread", id, k, t->frame_count);
            mains += t->main;
        }
        if (mains != 1)
            fail_msg("%s: %zu main threads", id, mains);
        unbuild(&b);
    }
}

/* A reader that sets an 8-byte word at `watch` to `value` when the walk
 * first reads that word alone (not within a larger range). */
typedef struct word_flip_reader {
    fp_reader inner;
    synth_image *img;
    uint64_t watch, value;
    bool done;
} word_flip_reader;

static int word_flip_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    word_flip_reader *r = ctx;
    if (!r->done && addr == r->watch && len == WORD_READ) {
        r->done = true;
        memcpy(synth_bytes(r->img, r->watch, WORD_READ), &r->value, WORD_READ);
    }
    return fp_reader_read(&r->inner, addr, buf, len);
}

static const fp_reader_ops WORD_FLIP_OPS = {.name = "word-flipping synthetic image", .read = word_flip_read};

/* 3.11, 3.12 (the main thread known by its ids): a thread state made for
 * a thread not started yet carries its creator's ids and no frames, and
 * sits at the list's head, before the main thread's own.  A walk that
 * does not reach the list's end (here: the thread after it fails, and its
 * next link changes before the list is followed on) must not return that
 * state as the main thread (ci/live thread_churn, 3.11: 4 wrong samples in
 * 20 million, a frameless "main thread" beside a thread that exited). */
static void test_unstarted_state_not_main(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLAYOUTS; i++) {
        const char *id = LAYOUTS[i];
        synth_frame w_frames[] = {{&CODE_A, 0, false, false, 0}};
        synth_frame main_frames[] = {{&CODE_LATIN1, 0, false, false, 0}};
        synth_thread th[] = {{4242, 0x7f0000001000ull, false, NULL, 0},
                             {4300, 0x7f0000003000ull, false, w_frames, 1},
                             {4242, 0x7f0000001000ull, true, main_frames, 1}};
        synth_desc d = {th, 3, NULL, 0};
        built b;
        build(id, &d, 0, &b);
        const fpi_layout *l = synth_layout(b.img);
        uint64_t w_ts = synth_thread_state_addr(b.img, 1), bogus = synth_thread_state_addr(b.img, 0);
        /* The worker's frame names no code object: its walk fails. */
        memcpy(synth_bytes(b.img, synth_frame_addr(b.img, 1, 0) + (uint64_t)l->fr_executable, 8), &bogus, 8);
        word_flip_reader fr = {.inner = b.rd, .img = b.img, .watch = w_ts + (uint64_t)l->ts_next, .value = bogus};
        fp_reader rd = {&WORD_FLIP_OPS, &fr};
        reattach(&b, &rd);
        int rc = fp_session_sample(b.s, b.sm);
        if (rc != FP_E_INCOMPLETE)
            fail_msg("%s: sampled as %d (%s), expected incomplete", id, rc, fp_session_get_errmsg(b.s));
        assert_true(fr.done);
        for (size_t k = 0; k < fp_sample_get_thread_count(b.sm); k++) {
            const fp_thread *t = fp_sample_get_thread(b.sm, k);
            if (t->main && t->frame_count != 1)
                fail_msg("%s: thread %zu (%zu frames, error %d) returned as the main thread", id, k,
                         t->frame_count, t->error);
        }
        /* Nor, known by the ids alone, as a good thread that is not the
         * main one: it may be the main thread itself, frameless. */
        const fp_thread *head = fp_sample_get_thread(b.sm, 0);
        if (l->interp_threads_main == FPI_OFF_NONE && (head->native_id != 4242 || head->error != FP_E_INCOMPLETE))
            fail_msg("%s: the frameless state with the main thread's ids came back with error %d", id, head->error);
        unbuild(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layouts_round_trip),
        cmocka_unit_test(test_corruptions),
        cmocka_unit_test(test_cache_byte_like_send),
        cmocka_unit_test(test_running_under_generator),
        cmocka_unit_test(test_callee_was_called),
        cmocka_unit_test(test_read_backs_per_link),
        cmocka_unit_test(test_thread_list_changes),
        cmocka_unit_test(test_untested_version),
        cmocka_unit_test(test_frame_cache_aba),
        cmocka_unit_test(test_shim_not_checked),
        cmocka_unit_test(test_unlinked_generator),
        cmocka_unit_test(test_switched_stack),
        cmocka_unit_test(test_position_bounds),
        cmocka_unit_test(test_frameless_thread_recreated),
        cmocka_unit_test(test_thread_started_in_front),
        cmocka_unit_test(test_thread_list_restarts_bounded),
        cmocka_unit_test(test_thread_exit_and_start), cmocka_unit_test(test_thread_exits_during_walk),
        cmocka_unit_test(test_read_stats),
        cmocka_unit_test(test_batched_read_back_torn), cmocka_unit_test(test_retry_in_one_read), cmocka_unit_test(test_top_frame_without_slots), cmocka_unit_test(test_popped_top_stopped), cmocka_unit_test(test_read_back_ahead_ranges_moved),
        cmocka_unit_test(test_tlbc_array_moved),
        cmocka_unit_test(test_code_confirmed_per_walk),
        cmocka_unit_test(test_code_generation_checked),
        cmocka_unit_test(test_late_code_read_back),
        cmocka_unit_test(test_late_code_read_back_batched),
        cmocka_unit_test(test_head_not_set_up),
        cmocka_unit_test(test_cleared_between_reads),
        cmocka_unit_test(test_read_back_in_chain_order), cmocka_unit_test(test_stopped_top_from_cache),
        cmocka_unit_test(test_waiting_generator_top),
        cmocka_unit_test(test_resuming_caller_from_cache),
        cmocka_unit_test(test_generator_callee_resumed),
        cmocka_unit_test(test_batched_read_back_unreadable),
        cmocka_unit_test(test_unreadable_instructions),
        cmocka_unit_test(test_new_thread_with_main_ids),
        cmocka_unit_test(test_unstarted_state_not_main),
        cmocka_unit_test(test_read_back_from_lowest_frame),
        cmocka_unit_test(test_cycle_at_max_depth),
        cmocka_unit_test(test_generation_read_beside_head),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
