/* synth_fixture.h — what the synthetic-image tests share (test_synth*.c):
 * the layouts and code objects they describe, building and checking an
 * image (synth_fixture.c), the corruptions (synth_corrupt.c) and the
 * readers that change an image under a sample. */
#ifndef SYNTH_FIXTURE_H
#define SYNTH_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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

void load_table(const char *id, uint8_t *buf);

bool has_table(const char *id);

/* Free-threaded 3.14+ runs thread-local copies of the bytecode. */
bool has_tlbc(const char *id);

/* Units before location entry i. */
int loc_start(const synth_code *c, int i);

typedef struct built {
    synth_image *img;
    fp_session *s;
    fp_sample *sm;
    fp_reader rd;
} built;

void build(const char *id, const synth_desc *d, uint32_t max_depth, built *b);

/* The address of the image's first (here only) interpreter state, read
 * from the runtime's list of interpreters. */
uint64_t first_interp(synth_image *img);

void unbuild(built *b);

void check_thread(const char *id, const fp_sample *sm, size_t ti, const expect_frame *ex, size_t nex);

/* Takes a sample of the scene, which must succeed, and checks thread ti. */
void sample_is(const char *id, built *b, size_t ti, const expect_frame *ex, size_t nex);

typedef struct scene {
    synth_frame t1[4], t2[4];
    synth_thread th[2];
    synth_desc d;
} scene;

/* The standard description: two threads covering every feature. */
void describe(const char *id, scene *sc);

/* Gives b a new session attached through rd to b's image (its target
 * description): a test's own reader sees every read from the first. */
void reattach(built *b, const fp_reader *rd);

/* The standard scene, built and attached. */
void build_scene(const char *id, uint32_t max_depth, scene *sc, built *b);

/* A case run once per layout on a freshly built scene (unbuilt after). */
typedef void (*scene_case)(size_t layout, const char *id, built *b);

/* Runs `body` once per layout on a scene freshly made by `make`. */
void each_scene_made(void (*make)(const char *id, scene *sc, built *b), scene_case body);

void standard_scene(const char *id, scene *sc, built *b);

void each_scene(scene_case body);

static const expect_frame EXPECT_T1[] = {
    {&CODE_A, 1, 2, false}, {&CODE_LATIN1, 1, 2, false}, {&CODE_GEN, 1, 2, true}, {&CODE_UCS2, 0, 0, false}};
static const expect_frame EXPECT_T2[] = {
    {&CODE_UCS4, 1, 15, false}, {&CODE_A, 4, 10, false}, {&CODE_A, 3, 7, false}};

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
void wipe_code(built *b, uint64_t f, uint64_t *start, uint64_t *unit, uint64_t *units);

/* The call-site opcode set of the image's version (NULL: none), and that
 * version's minor number. */
const fpi_call_site_set *image_call_sites(built *b, unsigned *minor);

bool op_in(const uint64_t words[4], int v);

/* The first frame-pushing opcode that resumes a generator (`resumes`:
 * SEND, FOR_ITER) or that pushes a function's frame (a call), or -1. */
int pushing_opcode(const fpi_call_site_set *set, bool resumes);

/* Frame f's code holds no frame-pushing instruction but `op`, which f is
 * suspended in: at f's unit (3.13+), or ending at it (3.11, 3.12, whose
 * callers name an instruction's last inline cache unit), the rest of the
 * code one-unit instructions as the instruction map decodes it.  False
 * when f's unit leaves no room for it. */
bool suspend_in(built *b, uint64_t f, const fpi_call_site_set *set, unsigned minor, int op);

/* Damages thread 1 (the second thread); thread 0 must stay exact. */
bool corrupt(built *b, int what);

/* Function objects a synthetic frame and its caller's stack name (compared,
 * never read). */
#define FUNC_CALLED 0x7f0000a00000ull
#define FUNC_OTHER 0x7f0000b00000ull

/* The stack depth the synthetic frame at fa saved (its stacktop, or 3.14+
 * its stack pointer), as the walk reads it. */
int32_t saved_depth(built *b, uint64_t fa);

/* 3.11-3.13: thread 1's frame 2 suspended in a CALL under frame 1, whose
 * function is FUNC_CALLED, with `slot0` and `slot1` at its saved stack
 * depth (that of every stopped synthetic frame, read from it).  False
 * on a layout without them. */
bool call_with_slots_on(built *b, size_t t, uint64_t slot0, uint64_t slot1);

/* What fp_session_set_retry_hook's hook was told. */
typedef struct retry_heard {
    unsigned calls;
    uint64_t native_id; /* the last call's */
} retry_heard;

void on_retry(void *ctx, uint64_t native_id);

/* Moves a frame's instruction pointer by `units` code units. */
void move_instr(built *b, uint64_t frame, int units);

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

int racing_read(void *ctx, uint64_t addr, void *buf, size_t len);

extern const fp_reader_ops RACING_OPS;

/* A racing reader over b's image that runs `change` at the first read of
 * `watch` it is armed for (the caller sets ts/other as the change needs). */
racing_reader racing_over(const built *b, uint64_t watch, void (*change)(racing_reader *));

/* Threads come and go as synth_plan_thread_exit and _start write them: an
 * exited thread leaves the sample, a new one in its freed state comes
 * first (the list's head) under its own ids with no frame; the main thread
 * does not exit and an exited thread does not move. */
#define NEW_THREAD_ID 0x7f0000003000ull
#define MAX_LIFECYCLE_WRITES 32

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

/* The scene's thread 1 without the __init__ shim (three frames), as the
 * only thread or as both threads. */
void build_call_chain_scene(const char *id, size_t nthreads, scene *sc, built *b);

void one_chain_scene(const char *id, scene *sc, built *b);

/* Runs body on the one-thread call-chain scene of every layout. */
void each_chain_scene(scene_case body);

/* A reader that keeps the ranges of its last batched read. */
#define KEPT_RANGES 512u
#define WORD_READ 8u
typedef struct keeping_reader {
    fp_reader inner;
    fp_iov last[KEPT_RANGES];
    size_t nlast;
} keeping_reader;

#endif
