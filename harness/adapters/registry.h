/* registry.h — the unwinders under test by name: the names --unwinder
 * accepts, their help, and the configurations (adapter.h) each adapter of
 * this directory offers.  The conformance library runs the set it is
 * handed (cf_run_opts.adapters); its front end builds the set here. */
#ifndef ADAPTERS_REGISTRY_H
#define ADAPTERS_REGISTRY_H

#include <stddef.h>

#include "adapter.h"

/* The --help text that lists every known unwinder. */
const char *cf_unwinder_help(void);

/* Builds the configurations of the named unwinders (each name once, in
 * the order given); cf_adapter_set_free releases them.  CF_E_NOTFOUND
 * with a message for an unknown name or a missing --unwinder-cmd;
 * CF_E_NOMEM. */
int cf_adapter_set_build(const char *const *names, size_t n, const cf_adapter_opts *o, cf_adapter_set *out,
                         char *err, size_t errlen);

/* The configurations each implementation offers (frameproof.c, cpython.c,
 * austin.c, command.c).  Each appends to a caller-provided array and
 * returns how many it wrote. */
size_t cf_frameproof_defs(cf_adapter_def *out, size_t cap);
size_t cf_cpython_defs(cf_adapter_def *out, size_t cap);
size_t cf_austin_defs(cf_adapter_def *out, size_t cap, const cf_adapter_opts *o);
size_t cf_command_defs(cf_adapter_def *out, size_t cap, const cf_adapter_opts *o);

#endif
