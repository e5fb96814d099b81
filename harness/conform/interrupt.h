/* interrupt.h — SIGINT/SIGTERM handling of `frameproof conform`:
 * the handler only records that a stop was requested; the loops poll it. */
#ifndef CF_SIGNAL_H
#define CF_SIGNAL_H

#include <stdbool.h>

/* Installs the SIGINT/SIGTERM handler (without SA_RESTART, so blocking
 * calls return EINTR) and ignores SIGPIPE.  Returns CF_OK or CF_E_IO. */
int cf_signal_install(void);

/* True once SIGINT or SIGTERM arrived. */
bool cf_interrupted(void);

#endif
