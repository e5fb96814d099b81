/* chain.h — a thread's data-stack chunks copied and its frame chain
 * followed through the copy (chain.c). */
#ifndef FPI_CHAIN_H
#define FPI_CHAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "session.h"

#define FPI_STACK_COPY_INITIAL 65536u /* bytes of chunk copies, first allocation */

/* Does a newest chunk at `chunk` with the data-stack top at `top` hold a
 * live part past its header, within FPI_MAX_CHUNK_BYTES? */
bool fpi_live_span(uint64_t chunk, uint64_t top);

/* Starts ch anew with the live part of the thread's data-stack chunks
 * (the newest at `chunk`, live up to `top`) copied, from `pre`
 * (may be NULL) where the sample's read-ahead or a retry's read took them;
 * FP_E_CORRUPT or FP_E_LIMIT for chunks no thread can have. */
int fpi_copy_chunks(fp_session *s, fpi_chain *ch, uint64_t chunk, uint64_t top, const fpi_thread_prefetch *pre);

/* Follows the chain of thread th from its top frame (to base_frame, 3.15+)
 * through ch's chunk copies: every frame followed into ch->seen (for the
 * read-back), every Python frame into ch->pending; with spec_frames, a
 * frame outside the data stack below the top from the frame cache's
 * proven bytes where it has them; stopped: the thread was stopped for the
 * walk (one instant of it).  FP_E_INCOMPLETE
 * ("torn: ...") for a chain cut or mixed while it was read, FP_E_CORRUPT
 * for a cycle or a frame no thread can have, FP_E_LIMIT past
 * opts.max_depth. */
int fpi_collect_chain(fp_session *s, fpi_chain *ch, fp_thread *th, uint64_t top, uint64_t base_frame,
                      bool spec_frames, bool stopped);

#endif
