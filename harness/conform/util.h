/* util.h — small helpers of `frameproof conform`: clocks, paths,
 * directories, file tails and JSON files. */
#ifndef CF_UTIL_H
#define CF_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "strbuf.h"

/* Monotonic clock in seconds. */
double cf_now(void);

/* Writes "a/b" into out; CF_E_LIMIT when it does not fit. */
int cf_path_join(char *out, size_t outlen, const char *a, const char *b);

/* mkdir -p (mode 0755); CF_E_IO with errno set on failure. */
int cf_mkdir_p(const char *path);

/* Appends (sanitized) the last max bytes of a file to out; a missing or
 * empty file appends nothing.  Returns CF_OK or CF_E_NOMEM. */
int cf_read_tail(const char *path, size_t max, cf_strbuf *out);

/* Copies name into out keeping [A-Za-z0-9._-] and replacing the rest by
 * '_', so that it is safe as one path component. */
void cf_sanitize_name(const char *name, char *out, size_t outlen);

/* Serializes obj and writes it atomically (temporary file + rename).
 * pretty: indented.  portable: the 3-byte encodings of lone surrogates that
 * Python strings may hold become \uXXXX escapes, so the file is valid
 * UTF-8 (without it they are kept as-is so that cf_json_read_file returns
 * exactly the same bytes). */
int cf_json_write_file(const char *path, json_object *obj, bool pretty, bool portable,
                       char *err, size_t errlen);

/* Reads and parses a JSON file. */
int cf_json_read_file(const char *path, json_object **out, char *err, size_t errlen);

/* Writes a whole text file atomically. */
int cf_write_text_file(const char *path, const char *text, size_t len, char *err, size_t errlen);

/* json-c accessors that tolerate absent keys. */
const char *cf_json_str(json_object *obj, const char *key, const char *dflt);
int64_t cf_json_int(json_object *obj, const char *key, int64_t dflt);
bool cf_json_bool(json_object *obj, const char *key, bool dflt);
double cf_json_double(json_object *obj, const char *key, double dflt);
/* An int32 value, or null_value for JSON null (v == NULL); CF_E_FORMAT for
 * anything else. */
int cf_json_int32(json_object *v, int32_t null_value, int32_t *out);
/* Returns the array under key, or NULL. */
json_object *cf_json_array(json_object *obj, const char *key);
/* The array of names under key (each a non-empty string of letters,
 * digits, '_' and '.') joined by single spaces into *out (malloc'd; "" for
 * an empty array), or *out NULL when key is absent; CF_E_FORMAT, with err
 * naming what and key, for anything else. */
int cf_json_names(json_object *obj, const char *key, const char *what, char **out, char *err, size_t errlen);
/* Steps through space-separated names (as cf_json_names joins them): the
 * next name, its length in *len, *cursor moved past it; NULL when none is
 * left (also for a NULL or empty list). */
const char *cf_names_next(const char **cursor, size_t *len);
/* True when name is one of the space-separated names. */
bool cf_names_have(const char *names, const char *name);

/* A number printed with millisecond precision (durations, timeouts). */
json_object *cf_json_seconds(double value);

/* Adds key to obj, taking ownership of val; CF_E_NOMEM if val is NULL. */
int cf_json_add(json_object *obj, const char *key, json_object *val);
/* Appends val to arr, taking ownership; CF_E_NOMEM if val is NULL. */
int cf_json_push(json_object *arr, json_object *val);

#endif
