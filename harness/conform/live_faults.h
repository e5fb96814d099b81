/* live_faults.h — the self-test faults of live mode (--inject-fault): a
 * good sample rewritten into what a known unwinder bug would return. */
#ifndef CF_LIVE_FAULTS_H
#define CF_LIVE_FAULTS_H

#include "sample.h"

/* --inject-fault splice-previous: out receives cur, except that for every
 * thread that also appears in prev (matched like cf_sample_find) where both
 * stacks have at least two frames and differ (function, file or line of a
 * frame), the thread keeps only its innermost frame and gets prev's outer
 * frames (all but prev's innermost) under it: the result of an unwinder
 * that spliced a stale cached parent chain.  out's strings point into cur
 * and prev.  Returns the number of threads spliced, or CF_E_NOMEM. */
int cf_live_splice(const cf_sample *cur, const cf_sample *prev, cf_sample *out);

/* --inject-fault frame-cache-by-address: out receives cur, except that for
 * every thread also in prev, the first frame below the innermost whose
 * frame_addr (non-zero) prev's thread also has is replaced, with every
 * frame under it, by prev's frames from that address down: the result of
 * an unwinder whose frame cache is keyed on the frame address alone, when
 * another call chain reused the address.  Returns the number of threads
 * whose stack this changed, or CF_E_NOMEM. */
int cf_live_cache_by_address(const cf_sample *cur, const cf_sample *prev, cf_sample *out);

#endif
