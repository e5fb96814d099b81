/* probe.h — --python-path: runs an interpreter binary (a fresh build
 * tree's `python`, say) once to learn its version and build, and adds it
 * to the manifest as if it had been provisioned. */
#ifndef CF_PROBE_H
#define CF_PROBE_H

#include <stddef.h>

#include "manifest.h"

/* Probes the binary at path (made absolute) and appends an entry whose id
 * is the path.  CF_E_UNWINDER-free: CF_OK, CF_E_NOMEM, or CF_E_FORMAT /
 * CF_E_IO / CF_E_TIMEOUT with the reason in err. */
int cf_probe_interpreter(const char *path, double timeout, cf_manifest *m, char *err, size_t errlen);

#endif
