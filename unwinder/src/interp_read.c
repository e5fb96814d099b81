/* interp_read.c — an interpreter state's words (list links, id, main
 * thread, code-object generation) and, where the GIL's state lies outside
 * the thread states (3.11, 3.12), who holds it: planned as one batched
 * read, alone or within the sample's first read (read_ahead.c). */
#include <string.h>

#include "interp_read.h"
#include "read.h"

/* Where the GIL's state lies: in _PyRuntime (3.11), behind the
 * interpreter's ceval.gil pointer (3.12), or nowhere (3.13+ keep it in the
 * thread state; free-threaded builds have none).  0: not read. */
uint64_t fpi_gil_base(const fpi_layout *l, uint64_t runtime, uint64_t gilp)
{
    if (l->free_threaded || l->ts_holds_gil != FPI_OFF_NONE)
        return 0;
    if (l->rt_gil_locked != FPI_OFF_NONE)
        return runtime;
    return l->gil_locked != FPI_OFF_NONE ? gilp : 0;
}

static int32_t gil_locked_off(const fpi_layout *l)
{
    return l->rt_gil_locked != FPI_OFF_NONE ? l->rt_gil_locked : l->gil_locked;
}

static int32_t gil_holder_off(const fpi_layout *l)
{
    return l->rt_gil_locked != FPI_OFF_NONE ? l->rt_gil_last_holder : l->gil_last_holder;
}

/* Appends the reads of interpreter addr's words to iov (at most
 * FPI_INTERP_IOV_MAX), the GIL's at gil (0: none); returns the count. */
size_t fpi_interp_iov(const fpi_layout *l, uint64_t addr, uint64_t gil, fpi_interp_words *w, fp_iov *iov)
{
    size_t n = 0;
    memset(w, 0, sizeof *w);
    w->addr = addr;
    w->gil_at = gil;
    iov[n++] = (fp_iov){addr + (uint64_t)l->interp_next, &w->next, sizeof w->next};
    iov[n++] = (fp_iov){addr + (uint64_t)l->interp_threads_head, &w->threads_head, sizeof w->threads_head};
    iov[n++] = (fp_iov){addr + (uint64_t)l->interp_id, &w->id, sizeof w->id};
    if (l->interp_threads_main != FPI_OFF_NONE)
        iov[n++] = (fp_iov){addr + (uint64_t)l->interp_threads_main, &w->threads_main, sizeof w->threads_main};
    if (l->interp_ceval_gil != FPI_OFF_NONE)
        iov[n++] = (fp_iov){addr + (uint64_t)l->interp_ceval_gil, &w->gilp, sizeof w->gilp};
    if (l->interp_code_generation != FPI_OFF_NONE)
        iov[n++] = (fp_iov){addr + (uint64_t)l->interp_code_generation, &w->generation, sizeof w->generation};
    if (gil) {
        iov[n++] = (fp_iov){gil + (uint64_t)gil_locked_off(l), &w->gil_locked, sizeof w->gil_locked};
        iov[n++] = (fp_iov){gil + (uint64_t)gil_holder_off(l), &w->gil_holder, sizeof w->gil_holder};
    }
    /* In address order, so that a reader can take neighbours as one range
     * (reader_vm.c); these words need no order among themselves. */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && iov[j - 1].addr > iov[j].addr; j--) {
            fp_iov t = iov[j];
            iov[j] = iov[j - 1];
            iov[j - 1] = t;
        }
    return n;
}

/* Reads the interpreter at addr, or takes its words from the sample's
 * first read (pre, when it read this interpreter). */
int fpi_read_interp(fp_session *s, uint64_t addr, uint64_t runtime, uint64_t main_tid, const fpi_interp_words *pre,
                    fpi_interp_info *ii)
{
    const fpi_layout *l = &s->layout;
    memset(ii, 0, sizeof *ii);
    ii->addr = addr;
    fpi_interp_words w;
    int rc;
    if (pre && pre->addr == addr) {
        w = *pre;
    } else {
        fp_iov iov[FPI_INTERP_IOV_MAX];
        /* 3.11's GIL is in _PyRuntime: read with the interpreter. */
        size_t n = fpi_interp_iov(l, addr, l->rt_gil_locked != FPI_OFF_NONE ? fpi_gil_base(l, runtime, 0) : 0, &w, iov);
        if ((rc = fpi_readv(s, iov, n)))
            return fpi_err_code(&s->err, rc, "cannot read interpreter state at 0x%llx", (unsigned long long)addr);
    }
    ii->next = w.next;
    ii->threads_head = w.threads_head;
    ii->threads_main = l->interp_threads_main != FPI_OFF_NONE ? w.threads_main : 0;
    ii->gilp = w.gilp;
    ii->id = (int64_t)w.id;
    if (ii->id < 0) /* CPython numbers its interpreters from 0: not an interpreter (or one freed meanwhile) */
        return fpi_err(&s->err, FP_E_CORRUPT, "interpreter state at 0x%llx: id %lld (CPython's count from 0)",
                       (unsigned long long)addr, (long long)ii->id);
    if (l->interp_code_generation != FPI_OFF_NONE) {
        /* Any code object freed since the last look may have had its
         * address reused: forget every cached code object. */
        if (!s->have_generation || w.generation != s->code_generation)
            fpi_code_cache_invalidate(&s->cc);
        s->code_generation = w.generation;
        s->have_generation = true;
        ii->generation = w.generation;
    }
    /* The GIL the words read is the one to use only if it is still where
     * the interpreter says (3.12: its ceval.gil pointer). */
    uint64_t gil = fpi_gil_base(l, runtime, w.gilp);
    if (gil && gil != w.gil_at) {
        fp_iov g[2] = {{gil + (uint64_t)gil_locked_off(l), &w.gil_locked, sizeof w.gil_locked},
                       {gil + (uint64_t)gil_holder_off(l), &w.gil_holder, sizeof w.gil_holder}};
        if ((rc = fpi_readv(s, g, 2)))
            return fpi_err_code(&s->err, rc, "cannot read the GIL state of interpreter %lld", (long long)ii->id);
    }
    if (gil) {
        ii->gil_known = true;
        ii->gil_holder = w.gil_locked ? w.gil_holder : 0;
    }
    if (ii->id == 0)
        ii->main_thread_id = main_tid;
    return FP_OK;
}
