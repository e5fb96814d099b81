/* interp_read.h — an interpreter state's words and its GIL's, as a sample
 * reads them (interp_read.c). */
#ifndef FPI_INTERP_READ_H
#define FPI_INTERP_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session.h"

/* What a sample read of one interpreter. */
typedef struct fpi_interp_info {
    uint64_t addr, next, threads_head, threads_main;
    uint64_t generation;     /* code_object_generation (3.14+) */
    int64_t id;
    bool gil_known;
    uint64_t gil_holder; /* 0 when unlocked */
    uint64_t gilp;       /* 3.12: where its GIL is */
    uint64_t main_thread_id; /* of the main interpreter, from _PyRuntime */
} fpi_interp_info;

/* The words of an interpreter state a sample needs, with the GIL's (3.11,
 * 3.12: who holds it), read in one batch: alone, or within the sample's
 * first read when the interpreter is the one the last sample started at. */
typedef struct fpi_interp_words {
    uint64_t addr;
    uint64_t next, threads_head, id, threads_main, gilp, generation;
    uint64_t gil_at;          /* the GIL these words read (0: none read) */
    int32_t gil_locked;
    uint64_t gil_holder;
} fpi_interp_words;

/* Reads fpi_interp_iov appends for one interpreter, at most. */
#define FPI_INTERP_IOV_MAX 8u

/* Where the GIL's state lies: in _PyRuntime (3.11), behind the
 * interpreter's ceval.gil pointer (3.12), or nowhere (3.13+ keep it in the
 * thread state; free-threaded builds have none).  0: not read. */
uint64_t fpi_gil_base(const fpi_layout *l, uint64_t runtime, uint64_t gilp);

/* Appends the reads of interpreter addr's words to iov (at most
 * FPI_INTERP_IOV_MAX), the GIL's at gil (0: none), in address order;
 * returns the count. */
size_t fpi_interp_iov(const fpi_layout *l, uint64_t addr, uint64_t gil, fpi_interp_words *w, fp_iov *iov);

/* Reads the interpreter at addr into *ii, or takes its words from the
 * sample's first read (pre, when it read this interpreter); forgets the
 * code cache when the code-object generation moved (3.14+). */
int fpi_read_interp(fp_session *s, uint64_t addr, uint64_t runtime, uint64_t main_tid, const fpi_interp_words *pre,
                    fpi_interp_info *ii);

#endif
