/* code_cache.c — decoded code objects (names, filename, line table) cached
 * by address.  An address can be reused by a new code object after the old
 * one is freed, so an entry is trusted only while it provably describes the
 * object now at that address: on 3.14+ the interpreter's
 * code_object_generation (bumped by every code-object deallocation) flushes
 * the cache; before 3.14 each entry is re-validated once per sample against
 * a fingerprint of the code object's identity fields. */
#include <stdlib.h>
#include <string.h>

#include "call_sites.h"
#include "grow.h"
#include "read.h"
#include "session.h"
#include "verify.h"

#define INIT_SHIM_NAME "__init__" /* co_name and co_filename of the __init__ cleanup shim */

#define CACHE_INITIAL_SLOTS 1024u
#define CODE_HEADER_MAX FPI_MAX_STRUCT_READ

void fpi_code_cache_init(fpi_code_cache *cc)
{
    memset(cc, 0, sizeof *cc);
}

static void entry_free(fpi_code_entry *e)
{
    free(e->qualname);
    free(e->name);
    free(e->filename);
    free(e->linetable);
    free(e->bytecode);
    free(e->starts);
    free(e);
}

static void free_retired(fpi_code_cache *cc)
{
    while (cc->retired) {
        fpi_code_entry *n = cc->retired->retired_next;
        entry_free(cc->retired);
        cc->retired = n;
    }
}

void fpi_code_cache_free(fpi_code_cache *cc)
{
    for (size_t i = 0; i < cc->cap && cc->count; i++)
        if (cc->slots[i]) {
            entry_free(cc->slots[i]);
            cc->count--;
        }
    free(cc->slots);
    free_retired(cc);
    memset(cc, 0, sizeof *cc);
}

static void retire(fpi_code_cache *cc, fpi_code_entry *e)
{
    e->retired_next = cc->retired;
    cc->retired = e;
}

void fpi_code_cache_invalidate(fpi_code_cache *cc)
{
    cc->epoch++;
    if (cc->count == 0)
        return;
    for (size_t i = 0; i < cc->cap; i++) {
        if (cc->slots[i]) {
            retire(cc, cc->slots[i]);
            cc->slots[i] = NULL;
        }
    }
    cc->count = 0;
}

void fpi_code_cache_begin_sample(fpi_code_cache *cc)
{
    /* Entries replaced during the previous sample may still have been
     * pointed to by that sample's frames: free them only now. */
    free_retired(cc);
    if (cc->count > FPI_CODE_CACHE_MAX) {
        fpi_code_cache_invalidate(cc);
        free_retired(cc);
    }
}

static size_t hash_addr(uint64_t a, size_t cap)
{
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdULL;
    a ^= a >> 33;
    return (size_t)a & (cap - 1);
}

static fpi_code_entry **find_slot(fpi_code_cache *cc, uint64_t addr)
{
    size_t i = hash_addr(addr, cc->cap);
    for (;;) {
        if (!cc->slots[i] || cc->slots[i]->addr == addr)
            return &cc->slots[i];
        i = (i + 1) & (cc->cap - 1);
    }
}

static int ensure_capacity(fpi_code_cache *cc)
{
    if (cc->cap && (cc->count + 1) * 2 <= cc->cap)
        return FP_OK;
    size_t ncap = cc->cap ? cc->cap * 2 : CACHE_INITIAL_SLOTS;
    fpi_code_entry **ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return FP_E_NOMEM;
    fpi_code_entry **old = cc->slots;
    size_t ocap = cc->cap;
    cc->slots = ns;
    cc->cap = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i])
            *find_slot(cc, old[i]->addr) = old[i];
    free(old);
    return FP_OK;
}

/* The identity of a code object: type, flags, first line, size and the
 * addresses of its name, qualname, filename and line table. */
static void fingerprint(const fpi_layout *l, const uint8_t *hdr, uint64_t *fpv)
{
    fpv[0] = fpi_load_u64(hdr, l->ob_type);
    fpv[1] = fpi_load_u32(hdr, l->co_flags);
    fpv[2] = fpi_load_u32(hdr, l->co_firstlineno);
    fpv[3] = fpi_load_u64(hdr, l->ob_size);
    fpv[4] = fpi_load_u64(hdr, l->co_filename);
    fpv[5] = fpi_load_u64(hdr, l->co_name);
    fpv[6] = fpi_load_u64(hdr, l->co_qualname);
    fpv[7] = fpi_load_u64(hdr, l->co_linetable);
}

static int read_header(fp_session *s, uint64_t addr, uint8_t *hdr, size_t hlen)
{
    int rc = fpi_read(s, addr, hdr, hlen);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read code object at 0x%llx", (unsigned long long)addr);
    int kind;
    rc = fpi_type_kind(s, fpi_load_u64(hdr, s->layout.ob_type), &kind);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read the type of the frame's code object at 0x%llx",
                      (unsigned long long)addr);
    if (kind != FPI_TYPE_CODE)
        return fpi_err(&s->err, FP_E_CORRUPT, "frame executable at 0x%llx: not a code object",
                      (unsigned long long)addr);
    return FP_OK;
}

static int load_entry(fp_session *s, uint64_t addr, const uint8_t *hdr, fpi_code_entry **out)
{
    const fpi_layout *l = &s->layout;
    fpi_code_entry *e = calloc(1, sizeof *e);
    if (!e)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: a code cache entry for 0x%llx", (unsigned long long)addr);
    e->addr = addr;
    e->epoch = s->cc.epoch;
    e->serial = ++s->cc.next_serial;
    e->checked_epoch = s->confirm_epoch;
    e->memo_unit = -1;
    fingerprint(l, hdr, e->fingerprint);
    e->flags = fpi_load_u32(hdr, l->co_flags);
    e->firstlineno = (int32_t)fpi_load_u32(hdr, l->co_firstlineno);
    e->firsttraceable = (int32_t)fpi_load_u32(hdr, l->co_firsttraceable);
    e->nlocalsplus = l->co_nlocalsplus != FPI_OFF_NONE ? (int32_t)fpi_load_u32(hdr, l->co_nlocalsplus) : 0;
    e->code_units = (int64_t)fpi_load_u64(hdr, l->ob_size);
    int rc;
    if (e->code_units < 0 || e->code_units > (int64_t)(FPI_LINETABLE_MAX_BYTES)) {
        rc = fpi_err(&s->err, FP_E_CORRUPT, "code object at 0x%llx: %lld code units",
                    (unsigned long long)addr, (long long)e->code_units);
        goto fail;
    }
    /* The first traceable instruction is never before the code's start
     * (it may lie past its end: 3.13+'s __init__ cleanup shim, 3 units,
     * says 4, so that its frame is never traceable). */
    if (e->firsttraceable < 0) {
        rc = fpi_err(&s->err, FP_E_CORRUPT, "code object at 0x%llx: first traceable instruction %d",
                     (unsigned long long)addr, (int)e->firsttraceable);
        goto fail;
    }
    if ((rc = fpi_read_str(s, fpi_load_u64(hdr, l->co_qualname), &e->qualname, NULL)) ||
        (rc = fpi_read_str(s, fpi_load_u64(hdr, l->co_name), &e->name, NULL)) ||
        (rc = fpi_read_str(s, fpi_load_u64(hdr, l->co_filename), &e->filename, NULL))) {
        fpi_err_prefix(&s->err, "code object at 0x%llx", (unsigned long long)addr);
        goto fail;
    }
    /* 3.13+: _Py_InitCleanup, named "__init__" in a file "__init__". */
    e->init_shim = strcmp(e->name, INIT_SHIM_NAME) == 0 && strcmp(e->filename, INIT_SHIM_NAME) == 0;
    rc = fpi_read_bytes(s, fpi_load_u64(hdr, l->co_linetable), FPI_LINETABLE_MAX_BYTES, &e->linetable, &e->linetable_len);
    if (rc) {
        fpi_err_prefix(&s->err, "line table of code object at 0x%llx", (unsigned long long)addr);
        goto fail;
    }
    /* The instructions, for the call-site check (opcode families do not
     * change when the interpreter specialises them).  A live code object
     * always holds them: in a live process, bytes that cannot be read are
     * no code object (one freed while a torn frame pointed at it), and an
     * entry kept without them would take every frame of that code object
     * past the check; so the load fails as torn and nothing is kept.  A
     * memory image need not record them: the check then does not apply to
     * this code object. */
    size_t nbytes = (size_t)e->code_units * 2u;
    if (s->call_sites && nbytes && nbytes <= FPI_MAX_CHECKED_BYTECODE) {
        e->bytecode = malloc(nbytes);
        if (!e->bytecode) {
            rc = fpi_err(&s->err, FP_E_NOMEM, "out of memory: %zu bytes of bytecode of 0x%llx", nbytes,
                         (unsigned long long)addr);
            goto fail;
        }
        rc = fpi_read(s, addr + (uint64_t)l->co_code_adaptive, e->bytecode, nbytes);
        if (rc == FP_E_PROCESS_GONE || rc == FP_E_PERMISSION) {
            rc = fpi_err_code(&s->err, rc, "cannot read the bytecode of code object at 0x%llx",
                              (unsigned long long)addr);
            goto fail;
        }
        if (rc && s->pid > 0) {
            rc = fpi_err(&s->err, FP_E_INCOMPLETE,
                         "torn: the instructions of code object 0x%llx cannot be read (%s): no longer a code object",
                         (unsigned long long)addr, fp_error_describe(rc));
            goto fail;
        }
        if (rc) {
            free(e->bytecode);
            e->bytecode = NULL;
        }
        rc = fpi_call_site_starts(s->call_sites, e->bytecode, e->code_units, &e->starts);
        if (rc) {
            rc = fpi_err(&s->err, rc, "out of memory: the instruction map of code object 0x%llx",
                         (unsigned long long)addr);
            goto fail;
        }
    }
    *out = e;
    return FP_OK;
fail:
    entry_free(e);
    return rc;
}

int fpi_code_get(fp_session *s, uint64_t addr, fpi_code_entry **out)
{
    const fpi_layout *l = &s->layout;
    fpi_code_cache *cc = &s->cc;
    size_t hlen = (size_t)l->co_code_adaptive;
    uint8_t hdr[CODE_HEADER_MAX];
    if (hlen > sizeof hdr || hlen < (size_t)l->co_qualname + 8)
        return fpi_err(&s->err, FP_E_CORRUPT, "code object header: size %zu is invalid", hlen);
    int rc = ensure_capacity(cc);
    if (rc)
        return rc;
    fpi_code_entry **slot = find_slot(cc, addr);
    fpi_code_entry *e = *slot;
    bool cached = e && s->opts.cache_code;
    if (cached && (l->interp_code_generation != FPI_OFF_NONE || e->checked_epoch == s->confirm_epoch)) {
        *out = e; /* trusted */
        return FP_OK;
    }
    if ((rc = read_header(s, addr, hdr, hlen)))
        return rc;
    s->code_late++; /* read outside the walk's read-back (session.h) */
    if (cached) {
        uint64_t fpv[FPI_CODE_FINGERPRINT_WORDS];
        fingerprint(l, hdr, fpv);
        if (memcmp(fpv, e->fingerprint, sizeof fpv) == 0) {
            e->checked_epoch = s->confirm_epoch;
            *out = e;
            return FP_OK;
        }
    }
    fpi_code_entry *ne = NULL;
    if ((rc = load_entry(s, addr, hdr, &ne)))
        return rc;
    if (e)
        retire(cc, e);
    else
        cc->count++;
    *slot = ne;
    *out = ne;
    return FP_OK;
}

static int ensure_prefetch(fp_session *s, size_t n, size_t hlen)
{
    fpi_read_set_clear(&s->prefetch);
    bool room = fpi_read_set_reserve(&s->prefetch, n);
    fpi_code_entry **ne = fpi_grow(s->prefetch_entries, &s->prefetch_n_cap, n, sizeof *ne, n);
    if (ne)
        s->prefetch_entries = ne;
    if (!room || !ne)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: prefetching %zu code objects", n);
    uint8_t *nb = fpi_grow(s->prefetch_buf, &s->prefetch_cap, n * hlen, 1, n * hlen);
    if (!nb)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: prefetching %zu code object headers", n);
    s->prefetch_buf = nb;
    return FP_OK;
}

/* Queues entry e (if cached and not yet confirmed for this sample) as
 * entry m of the confirmation; returns the new count. */
static size_t queue_confirm(fp_session *s, uint64_t code, size_t m)
{
    fpi_code_entry *e = s->cc.cap ? *find_slot(&s->cc, code) : NULL;
    if (!e || e->checked_epoch == s->confirm_epoch)
        return m;
    e->checked_epoch = s->confirm_epoch; /* queued; undone by fpi_code_confirm_finish unless confirmed */
    s->prefetch_entries[m] = e;
    return m + 1;
}

/* Whether cached entries must be confirmed each sample (no code-object
 * generation: before 3.14), and their header length. */
static size_t confirm_hlen(const fp_session *s)
{
    const fpi_layout *l = &s->layout;
    if (l->interp_code_generation != FPI_OFF_NONE || !s->opts.cache_code || !s->cc.cap)
        return 0;
    return (size_t)l->co_code_adaptive;
}

size_t fpi_code_confirm_queue(fp_session *s, const fpi_walk_used *us, size_t count, size_t *hlen_out)
{
    const fpi_layout *l = &s->layout;
    size_t hlen = confirm_hlen(s), n = 0, m = 0;
    *hlen_out = hlen;
    if (!hlen)
        return 0;
    for (size_t i = 0; i < count; i++)
        n += us[i].nseen;
    if (n == 0 || ensure_prefetch(s, n, hlen))
        return 0; /* best effort: fpi_code_get confirms each entry itself */
    for (size_t i = 0; i < count; i++)
        for (size_t j = 0; j < us[i].nseen; j++) {
            const fpi_seen_frame *f = &us[i].seen[j];
            if (f->owner == l->owner_thread || f->owner == l->owner_generator)
                m = queue_confirm(s, f->executable & ~l->executable_tag_mask, m);
        }
    return m;
}

uint64_t fpi_code_confirm_addr(const fp_session *s, size_t i)
{
    return s->prefetch_entries[i]->addr;
}

size_t fpi_code_confirm_finish(fp_session *s, size_t m, const uint8_t *hdrs)
{
    const fpi_layout *l = &s->layout;
    size_t hlen = (size_t)l->co_code_adaptive, unconfirmed = 0;
    for (size_t i = 0; i < m; i++) {
        fpi_code_entry *e = s->prefetch_entries[i];
        uint64_t fpv[FPI_CODE_FINGERPRINT_WORDS];
        if (hdrs) {
            fingerprint(l, hdrs + i * hlen, fpv);
            if (memcmp(fpv, e->fingerprint, sizeof fpv) == 0)
                continue; /* confirmed for this epoch */
        }
        e->checked_epoch = 0; /* let fpi_code_get re-read it */
        unconfirmed++;
    }
    return unconfirmed;
}

void fpi_code_prevalidate(fp_session *s, const fpi_pending_frame *frames, size_t n)
{
    size_t hlen = confirm_hlen(s);
    if (!hlen || n == 0 || ensure_prefetch(s, n, hlen))
        return;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m = queue_confirm(s, frames[i].code, m);
    if (m == 0)
        return;
    s->code_late++;
    for (size_t i = 0; i < m; i++)
        s->prefetch.iov[i] = (fp_iov){s->prefetch_entries[i]->addr, s->prefetch_buf + i * hlen, hlen};
    s->prefetch.n = m;
    bool ok = fpi_read_all(s, &s->prefetch) == FP_OK;
    fpi_code_confirm_finish(s, m, ok ? s->prefetch_buf : NULL);
}

int fpi_code_position(fpi_code_entry *e, int32_t unit, fpi_position *pos)
{
    if (unit < 0) {
        pos->line = pos->end_line = pos->column = pos->end_column = FP_POS_NONE;
        return FP_OK;
    }
    if (unit == e->memo_unit) {
        *pos = e->memo_pos;
        return FP_OK;
    }
    int rc = fpi_linetable_lookup(e->linetable, e->linetable_len, e->firstlineno, (uint32_t)unit, pos);
    if (rc)
        return rc;
    e->memo_unit = unit;
    e->memo_pos = *pos;
    return FP_OK;
}

int fpi_code_bytecode_start(fp_session *s, uint64_t code, int32_t idx, uint64_t *out, uint64_t *arr)
{
    const fpi_layout *l = &s->layout;
    *out = code + (uint64_t)l->co_code_adaptive;
    *arr = 0;
    if (idx == 0 || l->co_tlbc == FPI_OFF_NONE)
        return FP_OK;
    if (idx < 0 || idx >= FPI_MAX_TLBC_ENTRIES)
        return fpi_err(&s->err, FP_E_CORRUPT, "frame tlbc_index %d: out of range", idx);
    uint64_t a;
    int rc = fpi_read(s, code + (uint64_t)l->co_tlbc, &a, sizeof a);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read co_tlbc of code object 0x%llx", (unsigned long long)code);
    int64_t size;
    if ((rc = fpi_read(s, a, &size, sizeof size)))
        return fpi_err_code(&s->err, rc, "cannot read the TLBC array at 0x%llx", (unsigned long long)a);
    if (size < 0 || size > FPI_MAX_TLBC_ENTRIES || idx >= size)
        return fpi_err(&s->err, FP_E_CORRUPT, "tlbc_index %d: outside the TLBC array of size %lld",
                      idx, (long long)size);
    uint64_t entry;
    if ((rc = fpi_read(s, a + FPI_PTR_SIZE * (1u + (uint64_t)idx), &entry, sizeof entry)))
        return fpi_err_code(&s->err, rc, "cannot read TLBC entry %d", idx);
    if (entry == 0)
        return fpi_err(&s->err, FP_E_CORRUPT, "TLBC entry %d of code object 0x%llx: empty", idx,
                      (unsigned long long)code);
    *out = entry;
    *arr = a;
    return FP_OK;
}
