/* fpi_limits.h — the library's bounds, in one place: on what it accepts
 * from the target and the files it reads (everything read is untrusted),
 * and on the work one sample may do. */
#ifndef FPI_LIMITS_H
#define FPI_LIMITS_H

/* Structures and objects read from the target. */
#define FPI_MAX_STRUCT_READ 4096                     /* largest structure prefix the walker copies in one read */
#define FPI_MAX_FRAME_OBJECT_PREFIX 256              /* a frame object's bytes read up to its _f_frame_data's first word */
#define FPI_STR_HEADER_MAX 128                       /* largest str or bytes header the object readers copy */
#define FPI_MAX_STRING_BYTES (16u * 1024u * 1024u)   /* decoded name or filename */
#define FPI_MAX_STRING_CHARS (4u * 1024u * 1024u)    /* characters in a str object */
#define FPI_MAX_TYPE_NAME 64                         /* bytes of tp_name compared */
#define FPI_MAX_TLBC_ENTRIES 4096                    /* co_tlbc array length */
#define FPI_MAX_CHECKED_BYTECODE (4u * 1024u * 1024u) /* bytecode bytes kept for the call-site check */
#define FPI_LINETABLE_MAX_BYTES (64u * 1024u * 1024u) /* a line table the decoder accepts */

/* Data stacks. */
#define FPI_MAX_CHUNK_BYTES (64u * 1024u * 1024u)    /* one data-stack chunk */
#define FPI_MAX_CHUNKS 4096u                         /* chunks per thread */
#define FPI_MAX_STACK_COPY (256u * 1024u * 1024u)    /* all chunks of one thread */

/* Structure sizes a debug-offsets table may report. */
#define FPI_MAX_RUNTIME_SIZE (16u * 1024u * 1024u)
#define FPI_MAX_INTERP_SIZE (4u * 1024u * 1024u)
#define FPI_MAX_TSTATE_SIZE (64u * 1024u)
#define FPI_MAX_SMALL_STRUCT 4096u

/* Finding the runtime: /proc/PID/maps and ELF files. */
#define FPI_MAPS_MAX_ENTRIES 1000000u
#define FPI_MAPS_MAX_PATH 4096u
#define FPI_MAPS_MAX_BYTES (256u * 1024u * 1024u)
#define FPI_MAX_CANDIDATES 64                        /* mappings tried as the runtime */
#define FPI_ELF_MAX_SECTIONS 65536u
#define FPI_ELF_MAX_SYMBOLS (16u * 1024u * 1024u)

/* The work of one sample. */
#define FPI_THREAD_WALK_ATTEMPTS 8u                  /* tries of one thread's walk */
#define FPI_THREAD_LIST_RESTARTS 5u                  /* walks of an interpreter's threads again from its head */
#define FPI_VERIFY_READS 2u                          /* read-backs of one thread's walk */
#define FPI_VERIFY_READS_CHECKED 1u                  /* ... before its frames where the callee check applies */
#define FPI_SPEC_OLD_CHUNKS 8u                       /* older chunks of a thread read ahead (the rest: one by one) */
#define FPI_MAX_READ_AHEAD_BYTES (8u * 1024u * 1024u) /* the last sample's read-backs read again with a first read */
#define FPI_CODE_CACHE_MAX 65536u                    /* code objects kept between samples */
#define FPI_PAUSE_MAX_PASSES 64                      /* passes over /proc/PID/task until no new thread appears */

/* asyncio's task graph (async_graph.c). */
#define FPI_BLOCK_CACHE_BLOCK 4096u                  /* a stopped target's reads: bytes per block (block_cache.h) */
#define FPI_BLOCK_CACHE_SLOT_BITS 8                  /* ... 2^this blocks kept (1 MiB) */
#define FPI_BLOCK_CACHE_SLOTS (1u << FPI_BLOCK_CACHE_SLOT_BITS)
#define FPI_ASYNC_MAX_NODES (1u << 20)               /* tasks and futures in one graph */
#define FPI_ASYNC_MAX_AWAITERS (1u << 16)            /* slots of one awaited_by set's table */
#define FPI_PYOBJ_MAX_ITEMS (1u << 20)               /* entries of a dict, set or list read (pyobj.h) */
#define FPI_PYOBJ_MAX_REBUILT_LOG2 22                /* slots (log2) of a dict table read while rebuilt (pyobj.c):
                                                        its index is read whole */
#define FPI_ASYNC_HINTS 4u                           /* dict lookups of a 3.11-3.13 task graph read remembered */
#define FPI_ASYNC_MAX_STACKTOP (1 << 20)             /* stack depth of a suspended coroutine (3.11-3.13) */
#define FPI_ASYNC_MAX_LONG_DIGITS 3u                 /* 30-bit digits of an unnamed task's number */

#endif
