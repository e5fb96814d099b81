/* conform.h — error codes and limits of the conformance library (one
 * header for every limit of harness/conform and harness/adapters). */
#ifndef CF_TYPES_H
#define CF_TYPES_H

/* Every fallible conform function returns CF_OK or one of these. */
enum cf_rc {
    CF_OK = 0,
    CF_E_NOMEM = -1,        /* allocation failed */
    CF_E_IO = -2,           /* an operating-system call failed */
    CF_E_FORMAT = -3,       /* malformed input (manifest, index, channel line) */
    CF_E_TIMEOUT = -4,      /* a deadline passed */
    CF_E_EOF = -5,          /* the peer closed the channel */
    CF_E_INTERRUPTED = -6,  /* SIGINT or SIGTERM arrived */
    CF_E_LIMIT = -7,        /* a size limit below was exceeded */
    CF_E_NOTFOUND = -8,     /* a named item does not exist */
    CF_E_UNWINDER = -9,     /* the unwinder under test failed (attach or sample) */
};

/* Exit status after SIGINT/SIGTERM (128 + SIGINT, as shells report it). */
#define CF_EXIT_INTERRUPTED 130

/* Limits and tunables. */
#define CF_MAX_JOBS 256u                   /* --jobs upper bound */
#define CF_MAX_TIMEOUT_SCALE 1000.0        /* --timeout-scale upper bound */
#define CF_SAMPLES_PER_CHECKPOINT 3u       /* samples per configuration per checkpoint */
#define CF_DEBUG_TIMEOUT_FACTOR 2.0        /* extra timeout factor for Py_DEBUG builds */
#define CF_MAX_LINE_BYTES (64u << 20)      /* longest channel line accepted */
#define CF_TAIL_BYTES 2048u                /* stderr tail kept in reports */
#define CF_CHANNEL_WORD_MAX 32u           /* longest command line the harness sends a target */
#define CF_PREVIEW_BYTES 200u              /* offending channel text kept in errors */
#define CF_MAX_MISMATCHES_PER_THREAD 16u   /* frame differences listed per thread per sample */
#define CF_DIFF_MAX_CELLS (1u << 22)       /* largest frame-alignment table */
#define CF_NAME_SHOWN 160u                 /* longest name or path quoted in a message */
#define CF_EXIT_GRACE_S 5.0                /* minimum wait for exit after "done" */
#define CF_POLL_SLICE_MS 100               /* longest uninterrupted wait */
#define CF_ERRMSG_LEN 1024u                /* error message buffers */
#define CF_REASON_LEN 400u                 /* inner reasons quoted in an error message */
#define CF_ADAPTER_TIMEOUT_S 30.0          /* one foreign unwinder request (scaled) */
#define CF_CPYTHON_MIN_MAJOR 3             /* _remote_debugging.RemoteUnwinder first shipped in 3.14 */
#define CF_CPYTHON_MIN_MINOR 14
#define CF_CPYTHON_CACHE_MIN_MINOR 15      /* RemoteUnwinder(cache_frames=True) since 3.15 */
#define CF_CPYTHON_EXIT_WAIT_S 2.0         /* wait for the helper to exit after its stdin closes */
#define CF_JUNIT_MAX_TEXT 65536u           /* failure text per JUnit testcase */
#define CF_MAX_CONFIGS_PER_UNWINDER 8u     /* configurations one adapter may declare */
#define CF_INFO_LEN 256u                   /* what an adapter says it attached to */
#define CF_COMMAND_MAX_OUTPUT (64u << 20)  /* stdout of one --unwinder-cmd run */
#define CF_COMMAND_DRAIN_S 1.0             /* reading on after the command exits (its children may hold stdout) */
#define CF_COMMAND_SHELL "/bin/sh"         /* runs the --unwinder-cmd template */
#define CF_PROTOCOL_PATH_LEN 160u          /* a JSON path named in a protocol error */
#define CF_MOJO_MAX_BYTES (64u << 20)      /* longest MOJO stream read from austin */
#define CF_MOJO_MAX_STRING (1u << 20)      /* longest string in a MOJO stream */
#define CF_MOJO_MAX_ITEMS (1u << 22)       /* MOJO strings, frame definitions, frames or stacks, each */
#define CF_MOJO_MAX_VARINT_BYTES 10u       /* a MOJO varint (6 + 9 * 7 bits >= 64 bits) */
#define CF_AUSTIN_SAMPLES_PER_CHECKPOINT 1u /* each austin sample is a run with a 1 s exposure */
#define CF_AUSTIN_DEFAULT_EXE "/opt/austin/usr/bin/austin" /* inside the root (targets/provision) */
#define CF_AUSTIN_HOST_ROOT "sid"          /* root under FRAMEPROOF_HOME whose glibc runs austin for host targets */
#define CF_AUSTIN_LOADER "/lib64/ld-linux-x86-64.so.2" /* that root's dynamic loader */
#define CF_AUSTIN_LIBDIR "/usr/lib/x86_64-linux-gnu"   /* and its library directory */

/* Live mode (frameproof conform --live). */
#define CF_LIVE_REASON_LEN 512u            /* one wrong thread's reason */
#define CF_LIVE_MAX_FINDINGS 8u            /* findings recorded per sample */
#define CF_LIVE_MAX_FUNCTIONS 1024u        /* functions in one declaration */
#define CF_LIVE_MAX_PATTERNS 16u           /* file patterns of one function */
#define CF_LIVE_MAX_ROOT 32u               /* frames of one declared root */
#define CF_LIVE_MAX_LINES 65536u           /* lines of one line set */
#define CF_LIVE_MAX_TAG 64u                /* length of an @tag */
#define CF_LIVE_CACHE_SLOTS 4096u          /* frame identities cached per declaration (power of 2) */
#define CF_LIVE_DEFAULT_SAMPLES 3000ul     /* --samples default, per scenario x interpreter x configuration */
#define CF_LIVE_DEFAULT_SECONDS 2.0        /* --duration default, idem */
#define CF_LIVE_MAX_SAMPLES 100000000ul    /* --samples upper bound */
#define CF_LIVE_MAX_SECONDS 3600.0         /* --duration upper bound */
#define CF_LIVE_EXAMPLES_PER_RULE 3u       /* wrong samples kept per rule per configuration */
#define CF_LIVE_REJECT_KINDS 8u            /* distinct rejection reasons kept per configuration */
#define CF_LIVE_POLL_S 0.05                /* seconds between two looks at the channel while sampling */
#define CF_LIVE_STOP_WAIT_S 10.0           /* wait for "done" after "stop" (scaled) */

/* Where targets are copied inside an interpreter's root: this prefix, a
 * dash and 16 hex digits naming the targets directory (cf_chroot_targets),
 * so that runs from two checkouts sharing a root never share a copy. */
#define CF_CHROOT_TARGETS "/tmp/frameproof-targets"
#define CF_CHROOT_TARGETS_MAX 64 /* the whole name, with its terminating NUL */

/* Returns a short description of a CF_E_* code. */
const char *cf_strerror(int rc);

#endif
