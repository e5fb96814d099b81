/* sample.h — the harness's own record of one sample taken by an unwinder
 * under test: threads and frames, with the strings they point to.  Every
 * adapter fills one; the comparison reads only this type, so it is one code
 * path for every unwinder.  A field an unwinder does not report is marked
 * in cf_sample.fields and never compared. */
#ifndef CF_SAMPLE_H
#define CF_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fields an unwinder may report (cf_sample.fields, cf_adapter_def.fields). */
enum cf_field {
    CF_FIELD_FUNCTION = 1u << 0,     /* co_qualname */
    CF_FIELD_NAME = 1u << 1,         /* co_name */
    CF_FIELD_FILE = 1u << 2,         /* co_filename */
    CF_FIELD_LINE = 1u << 3,
    CF_FIELD_END_LINE = 1u << 4,
    CF_FIELD_COLUMN = 1u << 5,
    CF_FIELD_END_COLUMN = 1u << 6,
    CF_FIELD_KIND = 1u << 7,         /* python or generator frame */
    CF_FIELD_NATIVE_ID = 1u << 8,    /* kernel thread id (threads are matched on it) */
    CF_FIELD_THREAD_ID = 1u << 9,    /* threading.get_ident() (matched on it without native ids) */
    CF_FIELD_MAIN = 1u << 10,        /* the interpreter's main thread */
    CF_FIELD_EXCEPTION = 1u << 11,   /* the thread is handling an exception */
    CF_FIELD_ALL_THREADS = 1u << 12, /* the sample lists every thread, not only some */
};
#define CF_FIELD_COUNT 13u
#define CF_FIELDS_ALL ((1u << CF_FIELD_COUNT) - 1u)

/* The name of one field bit ("function", "end_line", ...), NULL if none. */
const char *cf_field_name(unsigned bit);

/* Parses a comma-separated list of field names into a mask; -1 with the
 * offending name in bad (when given) if one is unknown. */
int cf_fields_parse(const char *list, unsigned *mask, char *bad, size_t badlen);

/* Position fields: CF_POS_NONE where Python's co_positions() gives None. */
#define CF_POS_NONE (-1)

enum cf_frame_kind { CF_KIND_PYTHON = 0, CF_KIND_GENERATOR = 1 };

/* Tri-state for thread flags an unwinder may not know in one sample. */
enum cf_tristate { CF_UNKNOWN = -1, CF_NO = 0, CF_YES = 1 };

typedef struct cf_frame {
    const char *function;      /* strings: UTF-8, never NULL in a filled sample */
    const char *name;
    const char *file;
    int32_t line, end_line;    /* 1-based, or CF_POS_NONE */
    int32_t column, end_column; /* 0-based UTF-8 byte offsets, or CF_POS_NONE */
    int kind;                  /* enum cf_frame_kind */
    uint64_t frame_addr;       /* the frame's address in the target, 0 when not reported (never compared;
                                  only the frame-cache-by-address fault and wrong-sample examples use it) */
    int32_t instr_offset;      /* code units into the bytecode, meaningful only with frame_addr (examples) */
} cf_frame;

typedef struct cf_thread {
    uint64_t native_id;
    uint64_t thread_id;
    int64_t interp_id;
    bool main;
    int exception;             /* enum cf_tristate */
    const char *error;         /* the unwinder's message when this thread's walk failed, else NULL */
    size_t first, count;       /* its frames: cf_sample.frames[first .. first+count), innermost first */
} cf_thread;

typedef struct cf_strblock cf_strblock;

typedef struct cf_sample {
    unsigned fields;           /* enum cf_field: what this sample reports */
    cf_thread *threads;
    size_t nthreads, cap_threads;
    cf_frame *frames;
    size_t nframes, cap_frames;
    cf_strblock *strings;      /* storage of cf_sample_intern() */
} cf_sample;

void cf_sample_init(cf_sample *s);
void cf_sample_free(cf_sample *s);

/* Empties the sample, keeping its storage; fields is set to `fields`. */
void cf_sample_reset(cf_sample *s, unsigned fields);

/* Appends a thread (copied from *proto; first and count are set here) and
 * returns it through *out (valid until the next append).  CF_OK or
 * CF_E_NOMEM. */
int cf_sample_add_thread(cf_sample *s, const cf_thread *proto, cf_thread **out);

/* Appends a frame to the last thread added.  Its strings must live as long
 * as the sample: intern them unless the adapter owns them that long. */
int cf_sample_add_frame(cf_sample *s, const cf_frame *f);

/* Copies n bytes (plus a NUL) into storage owned by the sample until its
 * next reset; NULL on allocation failure. */
const char *cf_sample_intern(cf_sample *s, const char *str, size_t n);

/* Makes dst a copy of src whose strings are interned in dst, so that it
 * outlives the adapter's storage.  CF_OK or CF_E_NOMEM. */
int cf_sample_copy(cf_sample *dst, const cf_sample *src);

/* The thread with this id (native id when the sample reports native ids,
 * else thread id); if several interpreters have one (3.11 and 3.12 give a
 * sub-interpreter's thread state the native id of the thread that created
 * it), the one of the lowest interpreter id: the main interpreter, where the
 * ground truth comes from. */
const cf_thread *cf_sample_find(const cf_sample *s, uint64_t id);

/* --inject-fault: self-test faults applied to one thread of a sample. */
enum cf_fault {
    CF_FAULT_NONE = 0,
    CF_FAULT_DROP_FRAME = 1,   /* remove the innermost frame */
    CF_FAULT_SHIFT_LINE = 2,   /* add 1 to the innermost frame's line */
    CF_FAULT_SPLICE_PREVIOUS = 3, /* live mode: outer frames from the thread's previous sample (cf_live_splice) */
    CF_FAULT_CACHE_BY_ADDRESS = 4, /* live mode: a frame cache keyed on the frame address (cf_live_cache_by_address) */
};

/* Is this a live-mode fault (applied by the live runner across two samples)? */
bool cf_fault_is_live(int fault);

/* Applies a fault to the thread with this id (no-op if absent; a no-op
 * for the live faults, which need two samples). */
void cf_sample_inject(cf_sample *s, int fault, uint64_t id);

#endif
