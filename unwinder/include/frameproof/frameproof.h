/* frameproof.h — the public API of libframeproof, an out-of-process Python
 * stack unwinder for CPython 3.11–3.15 (GIL, free-threaded and debug builds).
 *
 * A session (fp_session) is attached to one target: a live process or any
 * memory source behind an fp_reader.  fp_session_sample() fills a
 * caller-owned, reusable fp_sample with every thread's stack.
 *
 * Conventions, for every call below unless it says otherwise:
 *   - names are fp_<object>_<verb>; a read-only accessor is
 *     fp_<object>_get_<property>;
 *   - a call that can fail returns FP_OK (0) or a negative FP_E_* code; a
 *     session keeps the message of a failed call on it
 *     (fp_session_get_errmsg), other calls fill the err buffer they take;
 *   - a handle is used from one thread at a time; different handles may be
 *     used from different threads at once; there is no global state;
 *   - fp_*_free accepts NULL;
 *   - nothing is ever written into the target's memory.
 */
#ifndef FRAMEPROOF_FRAMEPROOF_H
#define FRAMEPROOF_FRAMEPROOF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frameproof/export.h"
#include "frameproof/reader.h"
#include "frameproof/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Stable error codes (never renumbered). */
enum fp_error {
    FP_OK = 0,
    FP_E_NOMEM = -1,           /* allocation failed */
    FP_E_INVALID_ARG = -2,     /* caller passed a bad argument */
    FP_E_PROCESS_GONE = -3,    /* the target process does not exist or exited */
    FP_E_PERMISSION = -4,      /* not allowed to read the target */
    FP_E_NOT_PYTHON = -5,      /* no CPython runtime found in the target */
    FP_E_UNSUPPORTED = -6,     /* CPython version or build, or an option, not supported */
    FP_E_CORRUPT = -7,         /* layout or data read from the target is invalid */
    FP_E_INCOMPLETE = -8,      /* torn or unfinished walk: sample not trustworthy */
    FP_E_LIMIT = -9,           /* a configured limit was exceeded (depth, size, count) */
    FP_E_READ = -10,           /* a memory read failed (unmapped or short) */
    FP_E_IO = -11,             /* an operating-system call failed (file, /proc) */
    FP_E_FORMAT = -12,         /* a file (memory image, ELF) is malformed */
    FP_E_STATE = -13,          /* call not valid in the session's current state */
};

/* A short static string naming an FP_E_* code ("unknown error" for any
 * other value).  Thread-safe. */
FP_API const char *fp_error_describe(int code);

/* Reader backends for live processes. */
enum fp_reader_kind {
    FP_READER_AUTO = 0, /* process_vm_readv, falling back to /proc/PID/mem */
    FP_READER_VM = 1,   /* process_vm_readv only */
    FP_READER_MEM = 2,  /* /proc/PID/mem only */
};

/* Limits.  Zero in an fp_options limit means the default. */
#define FP_DEFAULT_MAX_DEPTH 65536u    /* frames per thread */
#define FP_DEFAULT_MAX_THREADS 65536u  /* threads per interpreter */
#define FP_DEFAULT_MAX_INTERPRETERS 4096u

/* Session options.  Versioned by size: a library reads only the fields the
 * caller's size covers and takes the default for the rest, so fields can be
 * appended without a new soname; a field added later has zero as its
 * default.  A size rather than setters keeps the options a plain struct
 * whose fields a caller sets by name.  Always set it up with
 * fp_options_init(). */
typedef struct fp_options {
    size_t size;             /* sizeof(fp_options) as the caller was compiled: set by fp_options_init */
    int reader;              /* enum fp_reader_kind (default FP_READER_AUTO) */
    uint32_t max_depth;      /* frames per thread, beyond which FP_E_LIMIT */
    uint32_t max_threads;    /* threads per interpreter, beyond which FP_E_LIMIT */
    uint32_t max_interpreters; /* interpreters, beyond which FP_E_LIMIT */
    bool cache_code;         /* keep decoded code objects between samples (default true) */
    bool thread_cpu_state;   /* fp_thread.on_cpu from /proc/PID/task/TID/stat (default true; live targets) */
    /* Unwind a CPython newer than FP_PYTHON_NEWEST_MINOR as if it were that
     * version, its _Py_DebugOffsets validated as always; otherwise it is
     * refused with FP_E_UNSUPPORTED.  fp_python_info.untested tells.
     * Default false. */
    bool allow_untested;
    /* Reuse what was resolved for a frame whose every input (address, code
     * object, instruction) is unchanged and proven since.  Needs cache_code.
     * Default true. */
    bool cache_frames;
    /* Stop every thread of a live target for each sample (ptrace, as
     * frameproof/pause.h): no sample is refused as torn, at the cost of
     * pausing the target.  Default false. */
    bool blocking;
    /* Stop alone (ptrace), walk and resume a live thread whose walks keep
     * being torn, rather than only retrying it; a thread that cannot be
     * stopped is retried as without it.  fp_read_stats.paused counts it.
     * Default false. */
    bool pause_torn;
} fp_options;

/* Sets opts->size to size and every field to its default.  size is the
 * caller's sizeof(fp_options); callers use fp_options_init().  Returns
 * FP_OK, or FP_E_INVALID_ARG for a NULL opts or a size smaller than the
 * first versioned layout. */
FP_API int fp_options_init_size(fp_options *opts, size_t size);

/* fp_options_init_size(opts, sizeof *opts). */
static inline int fp_options_init(fp_options *opts)
{
    return fp_options_init_size(opts, sizeof *opts);
}

/* Facts about the target's interpreter, known after attaching. */
typedef struct fp_python_info {
    uint32_t hexversion;     /* PY_VERSION_HEX */
    char version[32];        /* "3.15.2", "3.14.0b4" */
    bool free_threaded;
    bool debug;              /* Py_DEBUG build */
    uint64_t runtime_addr;   /* address of _PyRuntime in the target */
    char binary[4096];       /* file the runtime was found in ("" when not from a file) */
    bool untested;           /* newer than the newest supported version (fp_options.allow_untested) */
} fp_python_info;

/* Tri-state for facts a version or build may not be able to tell. */
enum fp_tristate { FP_UNKNOWN = -1, FP_NO = 0, FP_YES = 1 };

/* Where a frame lives. */
enum fp_frame_kind {
    FP_FRAME_PYTHON = 0,     /* an ordinary frame on the thread's data stack */
    FP_FRAME_GENERATOR = 1,  /* a frame embedded in a generator, coroutine or async generator */
};

/* Position fields use FP_POS_NONE when unknown ("absent" in co_positions()). */
#define FP_POS_NONE (-1)

typedef struct fp_frame {
    /* Strings are UTF-8 (lone surrogates as 3-byte sequences), owned by the
     * session and valid until its next fp_session_sample() or
     * fp_async_graph_read() (frameproof/async.h), detach or free. */
    const char *function;    /* co_qualname */
    const char *name;        /* co_name */
    const char *file;        /* co_filename */
    int32_t line, end_line;  /* 1-based, FP_POS_NONE when absent */
    int32_t column, end_column; /* 0-based UTF-8 byte offsets, FP_POS_NONE when absent */
    uint64_t code_addr;      /* address of the code object in the target */
    uint64_t frame_addr;     /* address of the _PyInterpreterFrame in the target */
    int32_t instr_offset;    /* offset in code units from the start of the bytecode in use */
    int kind;                /* enum fp_frame_kind */
} fp_frame;

typedef struct fp_thread {
    uint64_t native_id;      /* kernel thread id */
    uint64_t thread_id;      /* pthread_t as threading.get_ident() reports it */
    int64_t interp_id;
    bool main;               /* the interpreter's main thread */
    int holds_gil;           /* enum fp_tristate */
    int on_cpu;              /* enum fp_tristate */
    int gil_requested;       /* enum fp_tristate */
    int exception;           /* enum fp_tristate: handling or raising an exception */
    int error;               /* 0, or the FP_E_* code that made this thread's walk fail */
    size_t first_frame;      /* index into the sample's frames, innermost first */
    size_t frame_count;
} fp_thread;

typedef struct fp_interp {
    int64_t id;
    size_t first_thread;     /* index into the sample's threads */
    size_t thread_count;
} fp_interp;

typedef struct fp_session fp_session;
typedef struct fp_sample fp_sample;

/* Creates a detached session with the options opts (NULL: the defaults;
 * otherwise set up by fp_options_init).  The caller owns *out and frees it
 * with fp_session_free.  Errors: FP_E_INVALID_ARG (NULL out, opts->size too
 * small), FP_E_UNSUPPORTED (a field this library does not know is set, by a
 * caller built against a newer header), FP_E_NOMEM; no session message. */
FP_API int fp_session_new(const fp_options *opts, fp_session **out);
/* Detaches and frees s. */
FP_API void fp_session_free(fp_session *s);

/* Attaches s to live process pid: finds the CPython runtime in its mappings
 * and validates its layout.  Errors: FP_E_STATE (already attached),
 * FP_E_PROCESS_GONE, FP_E_PERMISSION, FP_E_NOT_PYTHON, FP_E_UNSUPPORTED,
 * FP_E_CORRUPT, FP_E_READ, FP_E_IO, FP_E_NOMEM; s stays detached and its
 * message tells every strategy tried. */
FP_API int fp_session_attach_pid(fp_session *s, int pid);

/* What a memory source other than a live pid must say about its target. */
typedef struct fp_target_desc {
    uint64_t runtime_addr;   /* address of _PyRuntime */
    uint32_t hexversion;     /* required for 3.11/3.12; 0: read it from _Py_DebugOffsets */
    bool free_threaded;      /* used when hexversion is given and < 3.13 */
    bool debug;              /* Py_DEBUG build */
    /* The live process the reader reads, or 0 (an image, or unknown: /proc
     * is not read).  With a pid, memory is taken to change under the reads. */
    int pid;
    /* Optional: the scheduler state letter of a thread ('R': on a CPU; 0:
     * unknown), for fp_thread.on_cpu.  Called from fp_session_sample; must
     * not call into the session.  NULL: on_cpu is FP_UNKNOWN. */
    char (*thread_state)(void *ctx, uint64_t native_id);
    void *thread_state_ctx;
    /* Optional: the address of asyncio's debug offsets table (.AsyncioDebug)
     * in the target, for fp_async_graph_read (frameproof/async.h); 0: found
     * through /proc/PID/maps with a pid, none without. */
    uint64_t asyncio_debug_addr;
} fp_target_desc;

/* Attaches s to the target that reader reads, as desc describes it.  The
 * reader is borrowed and must stay valid until s is detached or freed; desc
 * is copied.  Errors: as fp_session_attach_pid, and FP_E_INVALID_ARG. */
FP_API int fp_session_attach_reader(fp_session *s, const fp_reader *reader, const fp_target_desc *desc);

/* Detaches s (a no-op when detached), closing a reader it opened itself;
 * s can be attached again. */
FP_API void fp_session_detach(fp_session *s);

/* The message of the last failed call on s ("" when none, and for NULL).
 * Owned by s, valid until it is freed; the next call on s may change it. */
FP_API const char *fp_session_get_errmsg(const fp_session *s);

/* Copies the facts about the attached target's interpreter into *out.
 * Errors: FP_E_INVALID_ARG, FP_E_STATE (not attached). */
FP_API int fp_session_get_python(const fp_session *s, fp_python_info *out);

/* The name of the reader in use ("process_vm_readv", "/proc/PID/mem", ...;
 * "" when detached).  Static or owned by the reader. */
FP_API const char *fp_session_get_reader_name(const fp_session *s);

/* What s's samples cost since it was attached (attaching not counted). */
typedef struct fp_read_stats {
    uint64_t calls;          /* calls to the reader (a batched read counts once) */
    uint64_t bytes;          /* bytes those calls asked for */
    uint64_t torn;           /* thread walks the target changed under, each walked again */
    uint64_t paused;         /* walks done again with their thread stopped (fp_options.pause_torn) */
} fp_read_stats;
/* Copies s's statistics into *out.  Errors: FP_E_INVALID_ARG. */
FP_API int fp_session_get_read_stats(const fp_session *s, fp_read_stats *out);

/* Called by fp_session_sample, before it walks again a thread whose walk
 * was torn, with that thread's native id (0 when unknown), so that the
 * caller may act before the retry (move to that thread's CPU).  Must not
 * call into the session. */
typedef void (*fp_retry_hook)(void *ctx, uint64_t native_id);
/* Sets s's retry hook and its context (NULL hook: none, the default).
 * Errors: FP_E_INVALID_ARG (NULL s). */
FP_API int fp_session_set_retry_hook(fp_session *s, fp_retry_hook hook, void *ctx);
/* The hook and context set (NULL and NULL when none).  Errors:
 * FP_E_INVALID_ARG (a NULL argument). */
FP_API int fp_session_get_retry_hook(const fp_session *s, fp_retry_hook *hook, void **ctx);

/* Creates an empty sample, owned by the caller (fp_sample_free).  Its
 * storage grows as needed and is kept for the next sample.  Errors:
 * FP_E_INVALID_ARG, FP_E_NOMEM. */
FP_API int fp_sample_new(fp_sample **out);
FP_API void fp_sample_free(fp_sample *sm);

/* Replaces sm's contents with one sample of every thread of every
 * interpreter of s's target.  Frame strings in sm are owned by s and valid
 * until s's next sample, detach or free.  Errors: FP_E_STATE (not
 * attached), FP_E_INCOMPLETE and FP_E_READ (the target moved under the
 * walk: retrying may succeed), FP_E_LIMIT, FP_E_CORRUPT,
 * FP_E_PROCESS_GONE, FP_E_PERMISSION, FP_E_IO (stopping the target:
 * fp_options.blocking), FP_E_NOMEM, FP_E_INVALID_ARG.  On
 * FP_E_INCOMPLETE sm may hold the threads reached, a failed one with a
 * nonzero fp_thread.error and no frames: see fp_sample_is_usable. */
FP_API int fp_session_sample(fp_session *s, fp_sample *sm);

/* Whether sm, as fp_session_sample left it when it returned rc, can be
 * used: true on FP_OK, and on FP_E_INCOMPLETE or FP_E_LIMIT when threads
 * carry the failure alone — each failed thread with a nonzero
 * fp_thread.error (FP_E_LIMIT: deeper than fp_options.max_depth), every
 * other thread of every interpreter walked and good; false otherwise (a
 * thread list cut short or without its main thread leaves threads out
 * that no error names). */
FP_API bool fp_sample_is_usable(const fp_sample *sm, int rc);

/* Accessors of a sample: counts, and the i-th element (NULL when i is out
 * of range).  Pointers are owned by sm and valid until its next sample or
 * free.  A thread's frames are innermost first. */
FP_API size_t fp_sample_get_interp_count(const fp_sample *sm);
FP_API const fp_interp *fp_sample_get_interp(const fp_sample *sm, size_t i);
FP_API size_t fp_sample_get_thread_count(const fp_sample *sm);
FP_API const fp_thread *fp_sample_get_thread(const fp_sample *sm, size_t i);
FP_API size_t fp_sample_get_frame_count(const fp_sample *sm);
FP_API const fp_frame *fp_sample_get_frame(const fp_sample *sm, size_t i);

/* The thread of interpreter interp_id whose kernel id is native_id in sm
 * (an OS thread has at most one thread state per interpreter), or NULL;
 * a thread whose walk failed is returned with its error. */
FP_API const fp_thread *fp_sample_get_thread_by_native_id(const fp_sample *sm, int64_t interp_id, uint64_t native_id);

#ifdef __cplusplus
}
#endif

#endif /* FRAMEPROOF_FRAMEPROOF_H */
