/* fault.c — the torn-walk log behind fps_run's self-test faults
 * (fault.h). */
#include "fault.h"

void fps_torn_log_hook(void *ctx, uint64_t native_id)
{
    fps_torn_log *l = ctx;
    l->tears++;
    bool seen = native_id == 0;
    for (size_t i = 0; i < l->n && !seen; i++)
        seen = l->ids[i] == native_id;
    if (!seen && l->n < FPS_TORN_IDS_MAX)
        l->ids[l->n++] = native_id;
    if (l->chain)
        l->chain(l->chain_ctx, native_id);
}

void fps_torn_log_reset(fps_torn_log *l)
{
    l->n = 0;
    l->tears = 0;
}
