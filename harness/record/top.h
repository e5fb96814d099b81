/* top.h — the figures of a profile that `frameproof record` prints at the
 * end of a run: its functions ranked by self samples (the sample's
 * innermost frame is theirs) with their total samples (they are anywhere
 * on the sample's stack, counted once per sample however often they
 * recur), and the number of distinct stacks each thread was sampled in.
 * A function is a (function name, file) pair, as in the gecko output. */
#ifndef FPR_TOP_H
#define FPR_TOP_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

typedef struct fpr_top_entry {
    const char *function;  /* the profile's strings: valid while it lives */
    const char *file;
    int32_t line;          /* the line with most of its self samples (the first such line seen on a tie);
                              FP_POS_NONE when it has no self sample or no line */
    uint64_t self, total;
} fpr_top_entry;

typedef struct fpr_top {
    uint64_t samples;      /* thread samples in the profile (fpr_profile_points) */
    uint64_t stacks;       /* distinct (thread, stack) pairs sampled: the lines of the collapsed output */
    size_t functions;      /* distinct functions sampled */
    size_t count;          /* entries in top[] */
    fpr_top_entry *top;    /* the first count functions by self samples, then total, then name and file */
} fpr_top;

/* Computes the figures of p, keeping the first n functions.  Returns FP_OK
 * or FP_E_NOMEM (then *out is empty).  Free with fpr_top_free. */
int fpr_top_compute(const fpr_profile *p, size_t n, fpr_top *out);
void fpr_top_free(fpr_top *t);

#endif
