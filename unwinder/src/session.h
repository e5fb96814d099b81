/* session.h — internal state of an fp_session and an fp_sample, shared by
 * the walker, the code cache and the attach logic. */
#ifndef FPI_SESSION_H
#define FPI_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/frameproof.h"
#include "block_cache.h"
#include "fp_error.h"
#include "fpi_limits.h"
#include "frame_cache.h"
#include "layout.h"
#include "linetable.h"
#include "read_set.h"
#include "readback_ahead.h"
#include "tlbc_ahead.h"
#include "typed_load.h"
#include "walk_record.h"

#define FPI_TYPE_CACHE_SLOTS 16
#define FPI_CODE_FINGERPRINT_WORDS 8

enum fpi_type_kind {
    FPI_TYPE_OTHER = 0, FPI_TYPE_CODE, FPI_TYPE_STR, FPI_TYPE_BYTES, FPI_TYPE_NONE, FPI_TYPE_COROUTINE, FPI_TYPE_INT,
    FPI_TYPE_ASYNC_GEN,       /* async_generator: a generator object, as a coroutine is */
    FPI_TYPE_ASYNC_GEN_AWAIT, /* async_generator_asend / _athrow: its generator right after the header */
};

typedef struct fpi_type_slot {
    uint64_t addr;
    int kind;
} fpi_type_slot;

typedef struct fpi_code_entry {
    uint64_t addr;
    uint64_t epoch;           /* cache epoch it belongs to */
    uint64_t serial;          /* unique in the session: what the frame cache keys on */
    uint64_t checked_epoch;   /* s->confirm_epoch when last validated */
    char *qualname, *name, *filename;
    uint8_t *linetable;
    size_t linetable_len;
    uint8_t *bytecode;        /* co_code_adaptive when read (call_sites.c); NULL when over the limit */
    uint8_t *starts;          /* 3.11, 3.12: a bit per code unit that begins an instruction, decoded from
                               * bytecode (call_sites.c); NULL when it does not tell */
    int32_t firstlineno;
    int32_t firsttraceable;
    int32_t nlocalsplus;      /* 3.13: co_nlocalsplus (a frame's stack depth never goes under it while in use); else 0 */
    int64_t code_units;       /* Py_SIZE(code) */
    uint32_t flags;
    bool init_shim;           /* the __init__ cleanup shim, which waits for __init__ before its first traceable unit */
    uint64_t fingerprint[FPI_CODE_FINGERPRINT_WORDS]; /* fields compared when the address is seen again */
    /* one-entry lookup memo */
    int32_t memo_unit;
    fpi_position memo_pos;
    struct fpi_code_entry *retired_next;
} fpi_code_entry;

typedef struct fpi_code_cache {
    fpi_code_entry **slots;    /* open addressing by addr */
    size_t cap, count;
    uint64_t epoch;
    uint64_t next_serial;
    fpi_code_entry *retired;   /* replaced during a sample, freed at the next */
} fpi_code_cache;

/* A thread as the last sample saw it: where the next sample's first read
 * looks for it (read_ahead.c). */
typedef struct fpi_thread_memo {
    uint64_t interp, ts;      /* its interpreter and thread state */
    uint64_t chunk;           /* its newest data-stack chunk (0: none known) */
    uint64_t chunk_read;      /* bytes of it to read ahead: the live part seen, a margin, within the chunk */
    uint64_t cframe;          /* 3.11/3.12: its _PyCFrame (0: none known) */
    uint64_t old[FPI_SPEC_OLD_CHUNKS], old_len[FPI_SPEC_OLD_CHUNKS]; /* its older chunks, newest first, and the bytes copied */
    unsigned nold;
} fpi_thread_memo;

/* Thread states and live data-stack parts read ahead in one batch per
 * interpreter, from the thread list the previous sample saw. */
typedef struct fpi_thread_prefetch {
    uint64_t ts;              /* thread state address */
    size_t tsbuf;             /* offset of its copy in ts_bufs */
    uint64_t spec_chunk, spec_cframe; /* read with the sample's first read (0: not) */
    size_t spec_chunkbuf, spec_chunklen; /* ... the chunk's bytes, in chunk_bufs */
    uint64_t spec_old[FPI_SPEC_OLD_CHUNKS];   /* ... older chunks read with it */
    size_t spec_old_buf[FPI_SPEC_OLD_CHUNKS], spec_old_len[FPI_SPEC_OLD_CHUNKS];
    unsigned spec_nold;
    uint64_t chunk, top;      /* the live chunk part copied, if any */
    size_t chunkbuf, chunklen;/* offset/length in chunk_bufs (len 0: none) */
    uint64_t cframe, cframe_top; /* 3.11/3.12: the thread's _PyCFrame and its current frame */
    bool has_cframe_top;      /* cframe_top was read with the chunk */
    const uint8_t *ts_bytes;  /* what tsbuf counts from, once read (read_ahead.c: ts_bufs; retry_read.c: its buffer) */
    const uint8_t *chunk_bytes; /* ... and chunkbuf, spec_chunkbuf, spec_old_buf (chunk_bufs; the retry's buffer) */
} fpi_thread_prefetch;

/* A sample's thread states and stacks read ahead, for the interpreter being
 * walked (read_ahead.c fills it; the walks take each thread's bytes through
 * its fpi_thread_prefetch). */
typedef struct fpi_read_ahead {
    fpi_thread_prefetch *pf;  /* the interpreter's threads read ahead, in list order */
    size_t npf, pf_cap;
    uint8_t *ts_bufs, *chunk_bufs;
    size_t ts_bufs_cap, chunk_bufs_cap;
    fpi_read_set first_read;  /* the sample's first read, then the one finishing it */
    size_t spec_bytes;        /* bytes of chunk_bufs the sample's first read filled */
} fpi_read_ahead;

/* Where a dict lookup found its key (pyobj.h's hinted lookup): in the
 * dict at dict, whose keys object was keys, entry index. */
typedef struct fpi_dict_hint {
    uint64_t dict, keys;
    size_t index;
} fpi_dict_hint;

/* What the last sample saw, from which the next one plans its first read,
 * and what this sample has seen so far (swapped at each sample: walk.c). */
typedef struct fpi_seen_last {
    uint64_t interp;          /* the interpreter list's head in the last sample (0: none) */
    uint64_t gilp;            /* ... and where its GIL was (3.12) */
    fpi_thread_memo *last;    /* the threads of the last sample */
    size_t nlast, last_cap;
    fpi_thread_memo *cur;     /* ... and of this sample, so far (thread_list.c, thread.c) */
    size_t ncur, cur_cap;
} fpi_seen_last;

struct fp_session {
    /* What the session reads and how: set when it attaches. */
    fp_options opts;
    fpi_errbuf err;
    bool attached;
    int pid;
    fp_reader own_reader;     /* live backends owned by the session */
    const fp_reader *rd;      /* the reader in use */
    char (*thread_state)(void *ctx, uint64_t native_id); /* non-live sources */
    void *thread_state_ctx;
    fp_retry_hook retry_hook; /* fp_session_set_retry_hook, or NULL */
    void *retry_hook_ctx;
    fpi_layout layout;
    fp_python_info info;
    const struct fpi_call_site_set *call_sites; /* this version's, or NULL: no call-site check */
    size_t ts_read_len;       /* bytes of PyThreadState the walker copies */

    /* What outlives a sample: caches, each proven again where it is used,
     * and the counters that tell a walk what happened since it began. */
    fpi_type_slot types[FPI_TYPE_CACHE_SLOTS];
    size_t ntypes;
    uint64_t none_obj;        /* None's address once an object of NoneType was read (its only, static, instance) */
    fpi_code_cache cc;
    fpi_frame_cache fc;       /* opts.cache_frames */
    uint64_t sample_no;
    /* Bumped by every sample and every walk's last read-back: a cached code
     * object (before 3.14) is trusted for a walk only when confirmed in the
     * current epoch, within the window that walk was proven in.  Per sample
     * is too long: a walk retried after the sampler lost the processor for
     * milliseconds would trust an entry confirmed before, for a code object
     * freed and re-made at its address since. */
    uint64_t confirm_epoch;
    /* Code objects read outside a walk's read-back window (loaded when first
     * seen, or confirmed after the read-back): the walk is then read back
     * once more (fpi_verify_want.code_strict) before its frames stand. */
    uint64_t code_late;
    /* Links between two shown frames that the callee-function check did
     * not compare (fpi_emit_frames): a walk read back only once before its
     * frames (fpi_verify_reads_first) is read back again when it has one. */
    uint64_t links_unchecked;
    uint64_t code_generation;  /* last seen interp code_object_generation */
    bool have_generation;
    /* Where asyncio's .AsyncioDebug section was found (0: not yet); an
     * extension module is never unloaded, so it stays there while attached. */
    uint64_t async_debug_at;
    /* Where 3.11-3.13's asyncio registries were last found (async_legacy.c):
     * the dict lookups' hints (pyobj.h), each checked again where used. */
    fpi_dict_hint async_hints[FPI_ASYNC_HINTS];
    /* Every thread of the target is stopped for the walk under way
     * (fpi_session_walk_stopped): a thread caught mid-update stays so. */
    bool all_stopped;
    fp_read_stats reads;      /* what the samples read (fpi_read, fpi_readv) */
    fpi_block_cache blocks;   /* on while a caller holds the target stopped (block_cache.h) */
    fpi_seen_last seen_last;  /* the threads and stacks the last sample saw */
    fpi_readback_ahead rb_ahead;     /* read-backs taken with the first read (readback_ahead.c) */
    fpi_tlbc_ahead tlbc_ahead;       /* thread-local bytecode found with the first read (tlbc_ahead.c) */

    /* Storage the stages of a sample reuse, each its own stage's: what one
     * stage hands the next travels in the walk (fpi_thread_walk) and its
     * read-back's arguments, not here. */
    fpi_read_ahead ahead;        /* read_ahead.c */
    fpi_chain chain;             /* every thread walk records into it, through fpi_thread_walk.chain */
    struct fpi_walk_batch *batch;    /* walk_batch.c: an interpreter's walks awaiting one read-back */
    uint8_t *verify_buf;         /* verify.c: read-back copies */
    size_t verify_cap;
    fpi_read_set readback;       /* ... a read-back's ranges */
    struct fpi_verify_at *verify_at; /* ... where each walk of a batched read-back lies */
    size_t verify_at_cap;
    fpi_readback_ahead rb_retry;     /* retry_read.c: a torn attempt's read-backs, read with its retry */
    uint8_t *retry_buf;              /* ... the retry's one read */
    size_t retry_cap;
    fpi_read_set retry_read;         /* ... its ranges */
    uint8_t *prefetch_buf;       /* code_cache.c: code-object headers read in one batch */
    size_t prefetch_cap;
    fpi_read_set prefetch;       /* ... their ranges */
    fpi_code_entry **prefetch_entries;
    size_t prefetch_n_cap;
};

struct fp_sample {
    fp_interp *interps;
    size_t ninterps, interps_cap;
    fp_thread *threads;
    size_t nthreads, threads_cap;
    fp_frame *frames;
    size_t nframes, frames_cap;
    /* Set by the walk that failed only in threads' own walks, each failed
     * thread here with its error and no frames: every interpreter's
     * thread list was followed to its end and the others walked. */
    bool threads_failed_alone;
};

/* session.c: walks every thread into sm while p holds them all stopped
 * (a blocking sample's walk; each thread's scheduler state is the one p
 * read before the stop). */
struct fp_pause;
int fpi_session_walk_stopped(fp_session *s, fp_sample *sm, struct fp_pause *p);

/* sample.c */
int fpi_sample_reset(fp_sample *sm);
fp_interp *fpi_sample_push_interp(fp_sample *sm);
fp_thread *fpi_sample_push_thread(fp_sample *sm);
fp_frame *fpi_sample_push_frame(fp_sample *sm);

/* pystr.c: reads a str object and returns a malloc'd UTF-8 copy. */
int fpi_read_str(fp_session *s, uint64_t addr, char **out, size_t *out_len);
/* reads a bytes object into a malloc'd buffer (max bytes). */
int fpi_read_bytes(fp_session *s, uint64_t addr, size_t max, uint8_t **out, size_t *out_len);
/* classifies a type object by its tp_name (cached per type address). */
int fpi_type_kind(fp_session *s, uint64_t type_addr, int *kind);

/* code_cache.c */
void fpi_code_cache_init(fpi_code_cache *cc);
void fpi_code_cache_free(fpi_code_cache *cc);
void fpi_code_cache_begin_sample(fpi_code_cache *cc);
void fpi_code_cache_invalidate(fpi_code_cache *cc);
/* Looks up or reads the code object at addr. */
int fpi_code_get(fp_session *s, uint64_t addr, fpi_code_entry **out);
int fpi_code_position(fpi_code_entry *e, int32_t unit, fpi_position *pos);
/* The start of the bytecode a frame with tlbc_index idx executes in code:
 * free-threaded 3.14+'s thread-local copy idx, read afresh from the code
 * object's co_tlbc array (*arr: that array), or co_code_adaptive for idx 0
 * and builds without copies (*arr 0).  Errors: FP_E_CORRUPT (idx outside
 * the array, an empty entry), the reads'. */
int fpi_code_bytecode_start(fp_session *s, uint64_t code, int32_t idx, uint64_t *out, uint64_t *arr);
/* Re-validates, in one batched read, every cached code object of the chain
 * that needs it this sample (versions without code_object_generation).
 * Best effort: entries it cannot confirm are left to fpi_code_get.  Read
 * after the read-back: counted in s->code_late. */
void fpi_code_prevalidate(fp_session *s, const fpi_pending_frame *frames, size_t n);
/* The same confirmation within a walk's last read-back (verify.c): queues
 * the cached entries the walks' frames name (returns how many; *hlen: the
 * length of each one's header), gives the address of queued entry i's
 * header, and confirms the entries from their headers read back to back
 * (hdrs NULL: the read failed, none is confirmed); returns how many were
 * not confirmed. */
struct fpi_walk_used;
size_t fpi_code_confirm_queue(fp_session *s, const struct fpi_walk_used *us, size_t count, size_t *hlen);
uint64_t fpi_code_confirm_addr(const fp_session *s, size_t i);
size_t fpi_code_confirm_finish(fp_session *s, size_t m, const uint8_t *hdrs);

#endif
