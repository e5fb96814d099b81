/* profile.h — what `frameproof record` keeps of a run: every thread seen,
 * every distinct frame (function, file, line) and every distinct stack
 * (a trie of frames, root first) interned once, and each thread's samples
 * as (time, stack).  The output writers (out_*.c) read it back through the
 * accessors below.  No global state; one opaque handle per run. */
#ifndef FPR_PROFILE_H
#define FPR_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "frameproof/frameproof.h"

/* Which threads of a sample count (--mode). */
enum fpr_mode {
    FPR_MODE_WALL = 0, /* every thread with a Python frame */
    FPR_MODE_CPU = 1,  /* only threads the kernel shows running on a CPU */
    FPR_MODE_GIL = 2,  /* only the thread holding the GIL */
};

/* The mode named s ("wall", "cpu", "gil"); -1 for anything else. */
int fpr_mode_parse(const char *s);
const char *fpr_mode_name(int mode);

#define FPR_NO_STACK UINT32_MAX   /* the parent of a root stack entry */
#define FPR_THREAD_NAME_MAX 64    /* a thread name's room, NUL included (the kernel's comm holds 16) */

typedef struct fpr_frame {
    char *function;   /* co_qualname, UTF-8 */
    char *file;       /* co_filename */
    int32_t line;     /* the line executing, FP_POS_NONE when absent */
} fpr_frame;

typedef struct fpr_stack {
    uint32_t parent;  /* the stack without its innermost frame, FPR_NO_STACK for a root frame */
    uint32_t frame;   /* the innermost frame */
    uint32_t depth;   /* frames from the root, 1 for a root frame */
} fpr_stack;

typedef struct fpr_point {
    int64_t t_ns;     /* when the sample started, ns since the run started */
    uint32_t stack;   /* innermost stack entry */
} fpr_point;

typedef struct fpr_thread {
    uint64_t native_id;
    int64_t interp_id;
    bool main;
    char name[FPR_THREAD_NAME_MAX];
    fpr_point *points;
    size_t count, cap;
} fpr_thread;

/* What was left out, so that nothing is dropped silently. */
typedef struct fpr_dropped {
    uint64_t torn_threads;   /* threads whose walk failed in an otherwise usable (incomplete) sample */
    uint64_t deep_threads;   /* threads deeper than --max-depth (FP_E_LIMIT) in an otherwise usable sample */
    uint64_t idle_threads;   /* threads with no Python frame at that instant */
    uint64_t mode_threads;   /* threads the mode left out (not on a CPU, not holding the GIL) */
    uint64_t unknown_state;  /* of those, threads whose CPU or GIL state could not be told */
} fpr_dropped;

typedef struct fpr_profile fpr_profile;

/* Names a thread the first time it is seen: writes a NUL-terminated name of
 * at most size bytes into buf (leave it empty for none). */
typedef void (*fpr_namer)(void *ctx, uint64_t native_id, char *buf, size_t size);

/* Returns FP_OK or FP_E_NOMEM. */
int fpr_profile_new(int mode, fpr_namer namer, void *namer_ctx, fpr_profile **out);
void fpr_profile_free(fpr_profile *p);

/* Adds the threads of sample sm taken at t_ns that the mode keeps (a
 * thread whose walk failed is counted in dropped, never added).
 * Returns FP_OK or FP_E_NOMEM (the profile stays usable and unchanged by
 * the failed part). */
int fpr_profile_add(fpr_profile *p, const fp_sample *sm, int64_t t_ns);
/* The same for one thread th whose frames are frames[0..th->frame_count),
 * innermost first (what fpr_profile_add does for each thread of a sample). */
int fpr_profile_add_thread(fpr_profile *p, const fp_thread *th, const fp_frame *frames, int64_t t_ns);

int fpr_profile_mode(const fpr_profile *p);
size_t fpr_profile_thread_count(const fpr_profile *p);
const fpr_thread *fpr_profile_thread(const fpr_profile *p, size_t i);
size_t fpr_profile_frame_count(const fpr_profile *p);
const fpr_frame *fpr_profile_frame(const fpr_profile *p, uint32_t i);
size_t fpr_profile_stack_count(const fpr_profile *p);
const fpr_stack *fpr_profile_stack(const fpr_profile *p, uint32_t i);
uint64_t fpr_profile_points(const fpr_profile *p);   /* thread samples kept, over all threads */
const fpr_dropped *fpr_profile_dropped(const fpr_profile *p);

/* Fills out[0..depth) with stack i's frames, root first; returns depth.
 * out must hold fpr_profile_stack(p, i)->depth entries. */
uint32_t fpr_profile_unfold(const fpr_profile *p, uint32_t i, uint32_t *out);
/* The deepest stack's depth: room enough for any fpr_profile_unfold. */
uint32_t fpr_profile_max_depth(const fpr_profile *p);

#endif
