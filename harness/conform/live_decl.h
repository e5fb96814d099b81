/* live_decl.h — a live scenario's declaration (targets/live/NAME.decl.json,
 * format in targets/live/README.md): what any correct sample of the
 * running scenario must satisfy.  Loading and parsing it; judging a sample
 * against it is live_judge.h. */
#ifndef CF_LIVE_DECL_H
#define CF_LIVE_DECL_H

#include <stddef.h>

#include <json-c/json.h>

typedef struct cf_live_decl cf_live_decl;

/* Parses a declaration object.  Line specifications "@tag" are resolved
 * against script (the scenario's source text: every line whose comment
 * holds the token @tag); script may be NULL when no tag is used.  Returns
 * CF_OK, CF_E_FORMAT with the reason in err, or CF_E_NOMEM. */
int cf_live_decl_parse(json_object *decl, const char *script, cf_live_decl **out, char *err, size_t errlen);

/* Reads the declaration file and the scenario's source and parses them. */
int cf_live_decl_load(const char *decl_path, const char *script_path, cf_live_decl **out, char *err,
                      size_t errlen);

void cf_live_decl_free(cf_live_decl *d);

#endif
