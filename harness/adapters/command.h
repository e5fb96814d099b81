/* command.h — the `command` adapter: any external program that prints
 * the unwinder protocol (docs/unwinder-protocol.md) becomes the unwinder
 * under test.  It is run once per sample as `/bin/sh -c TEMPLATE` with
 * every "{pid}" replaced by the target's pid, in its own process group,
 * killed with the group on timeout. */
#ifndef ADAPTERS_COMMAND_H
#define ADAPTERS_COMMAND_H

#include <stddef.h>

#include "adapter.h"

/* The placeholder replaced by the target's pid in the template. */
#define CF_COMMAND_PID_PLACEHOLDER "{pid}"

/* Checks the options the command adapter reads: o->command is required
 * and holds "{pid}"; o->command_fields, when given, is a valid field list
 * (cf_fields_parse) that includes native_id or thread_id.  Returns CF_OK,
 * CF_E_NOTFOUND (no template) or CF_E_FORMAT, with a message in err.
 * cf_adapter_set_build calls it before cf_command_defs. */
int cf_command_check_opts(const cf_adapter_opts *o, char *err, size_t errlen);

/* cf_command_defs() (registry.h) writes one configuration, "command",
 * applying to every interpreter, or none when the options do not pass
 * cf_command_check_opts.  Its data points to *o, which (with its strings)
 * must outlive the definition.  Its fields are the declared list, or every
 * field the protocol carries (each sample narrows them to the keys its
 * document holds). */

#endif
