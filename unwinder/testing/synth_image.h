/* synth_image.h — the inside of a synthetic image, shared by the files of
 * the builder: synth.c (building one from a description, reading it back)
 * and synth_plan.c (the writes that change it as a running thread would).
 * Not part of synth.h's interface. */
#ifndef SYNTH_IMAGE_H
#define SYNTH_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "synth.h"

#define BASE_ADDR 0x10000000ull
#define REGION_GAP 0x1000ull        /* unmapped space between regions */
#define REGION_ALIGN 16ull
#define CHUNK_BYTES 16384u
#define CHUNK_HEADER 24u
#define FRAME_SLACK 64u             /* locals and stack after each frame */
/* Locals every synthetic code object declares.  3.11-3.13 frames keep a
 * stacktop: -1 for the running top frame, this (an empty value stack) for
 * a frame stopped at a call or its return, and 0 once 3.13 has cleared a
 * returned frame, as the walker expects of a running thread. */
#define SYNTH_NLOCALSPLUS 2u
#define SYNTH_STACKTOP_RUNNING 0xffffffffu /* -1 */
#define SYNTH_CLEARS_STACKTOP_MINOR 13u      /* the version whose return zeroes stacktop */
#define SYNTH_AT_INSTRUCTION_MINOR 13u       /* the first version whose callers name the instruction itself */
#define TYPE_OBJECT_BYTES 512u
#define MAX_REGIONS 65536u
#define MAX_FRAMES_PER_THREAD 4096u
#define GIL_BYTES 64u
#define CFRAME_BYTES 64u
#define STRING_KIND_SHIFT_MASK 7u
#define LOC_LONG_FORM 14
#define GEN_HEADER_BYTES 128u       /* room before a generator's embedded frame */
#define TS_EXTRA_BYTES 64u          /* after each thread state: asyncio's _PyThreadStateImpl fields */

typedef struct region {
    uint64_t addr;
    size_t len;
    uint8_t *bytes;
} region;

typedef struct built_code {
    const synth_code *src;
    uint64_t addr;
    uint64_t tlbc_copies[SYNTH_MAX_TLBC];
} built_code;

/* A frame of a thread's current stack, as synth_plan_move left it. */
typedef struct live_frame {
    uint64_t addr;
    const built_code *bc;
    int tlbc;
    bool generator;
    int unit;                  /* the code unit it is at */
} live_frame;

/* What synth_plan_move needs to know about a thread: where the words it
 * rewrites are, and the thread's stack as the planned writes leave it. */
typedef struct thread_book {
    uint64_t top_word;         /* the word naming the top frame (the thread state's, or its _PyCFrame's) */
    uint64_t bottom;           /* what the outermost frame's `previous` holds */
    uint64_t ts_datastack_top_word;
    uint64_t first_slot, chunk_end;
    live_frame *frames;        /* outermost first */
    size_t n, cap;
    uint64_t empty_top;        /* what the top word holds with no frame (3.15: the base frame) */
    bool exited;               /* unlinked and freed by synth_plan_thread_exit */
    bool main;                 /* described as the main thread */
} thread_book;

struct synth_image {
    fpi_layout l;
    /* PyASCIIObject.state bits, from the builder's own knowledge of the
     * layout id (not from the walker's layout) so a wrong walker table
     * shows up as a mismatch */
    unsigned kind_shift, compact_bit, ascii_bit;
    uint32_t hexversion;
    region *r;
    size_t nr, cap;
    uint64_t next;
    uint64_t runtime;
    uint64_t type_code, type_str, type_bytes, type_none;
    uint64_t none;             /* None: every thread's exception state holds it, as with no exception */
    uint64_t **frame_addrs;   /* per thread, per described frame */
    uint64_t *ts_addrs;       /* per thread */
    size_t nthreads;
    built_code *codes;        /* every code object built */
    size_t ncodes;
    thread_book *books;       /* per thread */
    uint64_t interp;          /* the one interpreter state */
    size_t *list;             /* the interpreter's thread list as planned: thread indices, head first */
    size_t nlist;
    int fill_op;              /* the opcode every code unit holds (-1: none known) */
    int resume_op;            /* 3.12+: SEND or FOR_ITER, as many cache units as fill_op (-1: none) */
    live_frame *suspended;    /* generator frames synth_plan_yield unlinked */
    size_t nsuspended, suspended_cap;
    uint64_t asyncio_table;    /* synth_asyncio's debug offsets table (0: none) */
    uint64_t *task_addrs;      /* per described task or future */
    size_t ntasks;
    char *err;
    size_t errlen;
};

/* Whether code unit `unit` of bc holds the opcode a frame that resumed a
 * generator is at (3.12+: SEND or FOR_ITER; false when none is known). */
bool synth_at_resume(synth_image *im, const built_code *bc, int unit);

/* Adds a frame at addr to the top of thread book b; 0, or -1 when out of
 * memory. */
int synth_book_frame(thread_book *b, uint64_t addr, const built_code *bc, int tlbc, bool generator, int unit);

/* A type object named name (its tp_name a C string of the image). */
uint64_t synth_type_object(synth_image *im, const char *name);

/* A str object holding utf8 (compact, or not when noncompact); 0 when
 * out of room or utf8 is malformed. */
uint64_t synth_str_object(synth_image *im, const char *utf8, bool noncompact);

/* Builds code object c (with its thread-local bytecode copies when
 * want_tlbc) into *out; 0, or -1 when the image has no room for it. */
int synth_code_object(synth_image *im, const synth_code *c, bool want_tlbc, built_code *out);

/* Records msg as im's error; returns FP_E_INVALID_ARG. */
int synth_fail(synth_image *im, const char *msg);

/* The next frame's slot in a chunk, advancing *chunk_pos; 0 when the chunk
 * (ending at chunk_end) has no room left. */
uint64_t synth_frame_slot(synth_image *im, uint64_t *chunk_pos, uint64_t chunk_end);

/* Little-endian stores into the image's backed memory (an address outside
 * every region is ignored). */
void synth_put8(synth_image *im, uint64_t addr, uint8_t v);
void synth_put32(synth_image *im, uint64_t addr, uint32_t v);
void synth_put64(synth_image *im, uint64_t addr, uint64_t v);

/* 3.14+: the stack pointer of the frame at fa stopped with an empty value
 * stack (SYNTH_NLOCALSPLUS slots above localsplus). */
uint64_t synth_stopped_stack_pointer(const fpi_layout *l, uint64_t fa);

#endif
