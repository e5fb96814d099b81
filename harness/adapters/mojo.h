/* mojo.h — a decoder of austin's MOJO binary sample stream (format
 * version 3, written by `austin --binary`).  The bytes come from a foreign
 * tool and are untrusted: every integer, string reference and event is
 * checked, and a stream that is cut short or malformed is an error with a
 * message naming the offset and the event.
 *
 * The stream: "MOJ", a varint version, then events, each one byte code
 * followed by its fields.  Integers are varints (first byte: 6 value bits,
 * 0x40 negative, 0x80 more; further bytes: 7 value bits, 0x80 more);
 * strings are NUL-terminated.  A STACK event opens a thread's sample (pid,
 * interpreter id, thread id as a hex string); the frames that follow are
 * FRAME_REF (a frame defined earlier by a FRAME event, whose file and scope
 * are references to STRING events), FRAME_INVALID or FRAME_KERNEL, outermost
 * first; metric events close it. */
#ifndef ADAPTERS_MOJO_H
#define ADAPTERS_MOJO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MOJO_MAGIC "MOJ"
#define MOJO_SUPPORTED_VERSION 3u

/* Event codes of format version 3. */
enum mojo_event {
    MOJO_EV_RESERVED = 0,
    MOJO_EV_METADATA = 1,
    MOJO_EV_STACK = 2,
    MOJO_EV_FRAME = 3,
    MOJO_EV_FRAME_INVALID = 4,
    MOJO_EV_FRAME_REF = 5,
    MOJO_EV_FRAME_KERNEL = 6,
    MOJO_EV_GC = 7,
    MOJO_EV_IDLE = 8,
    MOJO_EV_METRIC_TIME = 9,
    MOJO_EV_METRIC_MEMORY = 10,
    MOJO_EV_STRING = 11,
    MOJO_EV_STRING_REF = 12,
    MOJO_EV_COUNT = 13,
};

/* What one entry of a stack is. */
enum mojo_frame_kind {
    MOJO_FRAME_PYTHON = 0,   /* a FRAME_REF: file, scope and positions are set */
    MOJO_FRAME_BROKEN = 1,   /* FRAME_INVALID: austin could not read a frame */
    MOJO_FRAME_KERNEL = 2,   /* FRAME_KERNEL: scope only (austinp -k) */
};

/* One frame as austin reported it.  Positions are austin's raw numbers:
 * 1-based lines and columns, 0 where it had none. */
typedef struct mojo_frame {
    int kind;                /* enum mojo_frame_kind */
    uint64_t key;            /* FRAME key (MOJO_FRAME_PYTHON) */
    const char *file;        /* "" unless MOJO_FRAME_PYTHON */
    const char *scope;       /* the function's (qualified) name, "" for MOJO_FRAME_BROKEN */
    uint32_t line, line_end, column, column_end;
} mojo_frame;

/* One thread's sample: frames[first .. first+count) of the stream,
 * outermost first (the order austin writes them). */
typedef struct mojo_stack {
    uint64_t pid, iid, tid;  /* tid: the number austin prints in hex */
    size_t first, count;
    size_t broken;           /* FRAME_INVALID events in this stack */
    bool has_time, has_memory, idle, gc;
    uint64_t time;           /* METRIC_TIME (microseconds) */
    int64_t memory;          /* METRIC_MEMORY (bytes, signed) */
} mojo_stack;

typedef struct mojo_meta {
    const char *label, *value;
} mojo_meta;

typedef struct mojo_map mojo_map;

typedef struct mojo_stream {
    uint64_t version;
    mojo_stack *stacks;
    size_t nstacks, cap_stacks;
    mojo_frame *frames;      /* the stacks' frames, copied per reference */
    size_t nframes, cap_frames;
    mojo_meta *meta;
    size_t nmeta, cap_meta;
    /* decoder state: owned strings, string and frame definitions */
    char **owned;
    size_t nowned, cap_owned;
    mojo_frame *defs;
    size_t ndefs, cap_defs;
    mojo_map *string_keys;   /* STRING key -> owned index */
    mojo_map *frame_keys;    /* FRAME key -> defs index */
} mojo_stream;

void mojo_stream_init(mojo_stream *s);
void mojo_stream_free(mojo_stream *s);

/* Decodes a whole stream into s (initialized, empty).  CF_OK; CF_E_FORMAT
 * for malformed or truncated bytes; CF_E_LIMIT when a limit of conform.h is
 * exceeded; CF_E_NOMEM.  On failure err holds the reason and s holds what
 * was decoded before the offending event (free it either way). */
int mojo_decode(const unsigned char *buf, size_t len, mojo_stream *s, char *err, size_t errlen);

/* The value of a METADATA label (the last one given), or NULL. */
const char *mojo_meta_get(const mojo_stream *s, const char *label);

/* Number of leading stacks that form austin's first sampling pass (in *n):
 * they end before the first stack whose (pid, iid, tid) was already seen.
 * CF_OK or CF_E_NOMEM. */
int mojo_first_pass(const mojo_stream *s, size_t *n);

/* The name of an event code ("STACK"), or "unknown". */
const char *mojo_event_name(unsigned code);

#endif
