/* sampling_policy.c — record's and bench's flags to a sampling policy
 * (sampling_policy.h). */
#include "sampling_policy.h"

#include <stdio.h>
#include <string.h>

void cli_policy_init(cli_policy *p)
{
    *p = (cli_policy){.colocate = CLI_POLICY_UNSET, .pause_torn = CLI_POLICY_UNSET, .hold = CLI_POLICY_UNSET,
                         .realtime = CLI_POLICY_UNSET, .fault = FPS_FAULT_NONE};
}

int cli_policy_fault(const char *cmd, const char *value, cli_policy *p)
{
    if (strcmp(value, "drop-torn") == 0)
        p->fault = FPS_FAULT_DROP_TORN;
    else if (strcmp(value, "retry-quiet") == 0)
        p->fault = FPS_FAULT_RETRY_QUIET;
    else {
        fprintf(stderr, "frameproof %s: --inject-fault must be drop-torn or retry-quiet, not '%s'\n", cmd, value);
        return -1;
    }
    return 0;
}

int cli_policy_apply(const char *cmd, cli_policy *p, fp_options *lib, fps_config *cfg)
{
    const char *clash = NULL;
    if (p->blocking && p->pause_torn == CLI_POLICY_ON)
        clash = "--blocking and --pause-torn exclude each other";
    else if (p->fault != FPS_FAULT_NONE && p->blocking)
        clash = "--inject-fault and --blocking exclude each other";
    else if (p->fault != FPS_FAULT_NONE &&
             (p->colocate == CLI_POLICY_ON || p->pause_torn == CLI_POLICY_ON || p->hold == CLI_POLICY_ON))
        clash = "--inject-fault takes plain reads: not with --colocate, --hold or --pause-torn";
    else if (p->hold == CLI_POLICY_ON && p->colocate == CLI_POLICY_OFF)
        clash = "--hold holds the thread on the sampler's CPU: not with --no-colocate";
    if (clash) {
        fprintf(stderr, "frameproof %s: %s\n", cmd, clash);
        return -1;
    }
    /* Stopping every thread leaves no torn walk to stop alone, but not
     * the hold: a stop asked of a thread running on another CPU lands
     * microseconds later, at once if the thread enters the kernel
     * meanwhile, so stops from afar fall on system calls more often than
     * time spent there warrants; a held thread, preempted by the sampler
     * on its own CPU at the tick, stops where the tick found it.  A
     * fault's bias shows only in plain reads. */
    const bool plain = p->fault != FPS_FAULT_NONE;
    lib->blocking = p->blocking;
    lib->pause_torn = plain || p->blocking ? false : p->pause_torn != CLI_POLICY_OFF;
    cfg->colocate_pid = p->colocate == CLI_POLICY_ON || (!plain && p->colocate == CLI_POLICY_UNSET) ? 1 : 0;
    cfg->hold = cfg->colocate_pid > 0 && p->hold != CLI_POLICY_OFF;
    /* On a schedule the held thread waits for the read only, not for the
     * profile's bookkeeping, which a thread of its own does while the
     * sampler sleeps.  Back to back nothing sleeps: the hand-over would
     * wake that thread at every attempt and wait for it (two wake-ups
     * across CPUs, about 40 us of CPU an attempt on a 2-core VM,
     * ci/sample-cost), so the sampler delivers after the release. */
    cfg->offload = cfg->hold && cfg->rate_hz > 0;
    p->realtime_refused[0] = 0;
    cfg->realtime = p->realtime == CLI_POLICY_ON;
    if (p->realtime == CLI_POLICY_UNSET && cfg->hold && cfg->rate_hz > 0)
        cfg->realtime = fps_realtime_check(p->realtime_refused, sizeof p->realtime_refused) == FP_OK;
    cfg->fault = p->fault;
    /* Modes that hold the target still while it is read space their ticks
     * in its own running time (fps_config.target_time). */
    cfg->target_time = p->blocking || cfg->colocate_pid > 0;
    return 0;
}
