/* adapter.c — an adapter configuration's label and why it does not apply
 * to an interpreter; the release of a set of configurations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "conform.h"

void cf_adapter_label(const cf_adapter_def *d, char *buf, size_t len)
{
    if (d->config && d->config[0])
        snprintf(buf, len, "%s:%s", d->unwinder, d->config);
    else
        snprintf(buf, len, "%s", d->unwinder);
}

void cf_adapter_na(const cf_adapter_def *d, const cf_interp *in, char *na, size_t len)
{
    char buf[CF_REASON_LEN] = "";
    const char *why = d->applies ? d->applies(d, in, buf, sizeof buf) : NULL;
    snprintf(na, len, "%s", !why ? "" : *why ? why : "does not apply to this interpreter");
}

void cf_adapter_set_free(cf_adapter_set *s)
{
    for (size_t i = 0; i < s->nowned; i++)
        free(s->owned[i]);
    free(s->owned);
    free(s->defs);
    memset(s, 0, sizeof *s);
}
