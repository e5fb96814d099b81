/* scenarios.h — the scenario index (targets/scenarios/index.json) and
 * the rule that decides whether a scenario applies to an interpreter. */
#ifndef CF_INDEX_H
#define CF_INDEX_H

#include <stdbool.h>
#include <stddef.h>

#include "manifest.h"

enum cf_builds { CF_BUILDS_ANY = 0, CF_BUILDS_GIL = 1, CF_BUILDS_FT = 2 };

#define CF_DEFAULT_SCENARIO_TIMEOUT 20.0 /* seconds, when the index gives none */

typedef struct cf_scenario {
    char *name;
    char *file;            /* relative to targets/scenarios */
    char *description;     /* "" when absent */
    char *declaration;     /* live scenarios: the declaration file, relative like file; NULL when absent */
    int min_major, min_minor;
    bool has_max;
    int max_major, max_minor;
    int builds;            /* enum cf_builds */
    double timeout;        /* seconds */
    bool fast;
    char *modules;         /* "modules": importable modules it needs, space-separated; NULL: none */
} cf_scenario;

typedef struct cf_index {
    cf_scenario *items;
    size_t count;
} cf_index;

int cf_index_load(const char *path, cf_index *out, char *err, size_t errlen);
void cf_index_free(cf_index *ix);
long cf_index_find(const cf_index *ix, const char *name);

/* NULL when the scenario applies to the interpreter, else the reason it
 * is skipped (written into buf). */
const char *cf_scenario_skip_reason(const cf_scenario *s, const cf_interp *in, char *buf, size_t len);

#endif
