/* interrupt.c — SIGINT/SIGTERM flag of `frameproof conform`. */
#include <signal.h>
#include <string.h>

#include "interrupt.h"
#include "conform.h"

/* The only global mutable state of the conform harness: a signal handler
 * can communicate with the rest of the program only through a static
 * volatile sig_atomic_t.  Each forked worker has its own copy. */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

int cf_signal_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: waits return EINTR */
    if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0)
        return CF_E_IO;
    sa.sa_handler = SIG_IGN;
    if (sigaction(SIGPIPE, &sa, NULL) != 0)
        return CF_E_IO;
    return CF_OK;
}

bool cf_interrupted(void)
{
    return stop_requested != 0;
}
