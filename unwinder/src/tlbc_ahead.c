/* tlbc_ahead.c — a frame running thread-local bytecode (free-threaded
 * 3.14+) is resolved through its code object's co_tlbc array: three words,
 * read one after the other after the walk's read-backs.  The next sample's
 * first read reads the same three places again, after everything else it
 * reads, and a frame of the same code object and index takes them from
 * there when the code object still points to the array they were read
 * from, and nothing was read since that first read.  The order is the
 * one of the fresh reads (the frame copied and read back, then the code
 * object's pointer, the array's size and the entry), and the entry is as
 * fresh: read in this sample, never kept from the last.  A sample that read
 * more (a walk retried, a read-back of its own) resolves afresh. */
#include <string.h>

#include "session.h"
#include "tlbc_ahead.h"


size_t fpi_tlbc_ahead_append(fpi_tlbc_ahead *t, uint64_t sample_no, int32_t co_tlbc, fpi_read_set *first_read)
{
    size_t want = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->memo[i].used_in + 1 == sample_no)
            want += 3;
    if (!want)
        return 0;
    if (!fpi_read_set_reserve(first_read, want))
        return 0;
    fp_iov *ni = first_read->iov;
    size_t k = first_read->n;
    for (size_t i = 0; i < t->n; i++) {
        fpi_tlbc_memo *m = &t->memo[i];
        if (m->used_in + 1 != sample_no)
            continue;
        m->read_in = 0;
        ni[k++] = (fp_iov){m->code + (uint64_t)co_tlbc, &m->arr_now, FPI_PTR_SIZE};
        ni[k++] = (fp_iov){m->arr, &m->size_now, FPI_PTR_SIZE};
        ni[k++] = (fp_iov){m->arr + FPI_PTR_SIZE * (1u + (uint64_t)m->idx), &m->entry_now, FPI_PTR_SIZE};
    }
    first_read->n = k;
    return want;
}

void fpi_tlbc_ahead_read(fpi_tlbc_ahead *t, uint64_t sample_no, uint64_t calls)
{
    t->read_calls = calls;
    for (size_t i = 0; i < t->n; i++)
        if (t->memo[i].used_in + 1 == sample_no)
            t->memo[i].read_in = sample_no;
}

static fpi_tlbc_memo *find(fpi_tlbc_ahead *t, uint64_t code, int32_t idx)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->memo[i].code == code && t->memo[i].idx == idx)
            return &t->memo[i];
    return NULL;
}

bool fpi_tlbc_ahead_take(fpi_tlbc_ahead *t, uint64_t sample_no, uint64_t calls, uint64_t code, int32_t idx,
                         uint64_t *entry)
{
    fpi_tlbc_memo *m = find(t, code, idx);
    if (!m || m->read_in != sample_no || calls != t->read_calls || m->arr_now != m->arr)
        return false;
    if ((int64_t)m->size_now <= idx || (int64_t)m->size_now > FPI_MAX_TLBC_ENTRIES || m->entry_now == 0)
        return false;
    m->used_in = sample_no;
    *entry = m->entry_now;
    return true;
}

void fpi_tlbc_ahead_note(fpi_tlbc_ahead *t, uint64_t sample_no, uint64_t code, int32_t idx, uint64_t arr)
{
    fpi_tlbc_memo *m = find(t, code, idx);
    if (!m) {
        if (t->n < FPI_TLBC_AHEAD_SLOTS) {
            m = &t->memo[t->n++];
        } else {
            m = &t->memo[t->next_victim];
            t->next_victim = (t->next_victim + 1) % FPI_TLBC_AHEAD_SLOTS;
        }
    }
    memset(m, 0, sizeof *m);
    m->code = code;
    m->idx = idx;
    m->arr = arr;
    m->used_in = sample_no;
}
