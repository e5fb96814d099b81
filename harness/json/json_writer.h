/* json_writer.h — a small streaming JSON writer (jw_*) for the outputs of
 * the CLI and of `record` (UTF-8 text; lone surrogates from Python strings
 * become \uXXXX). */
#ifndef JW_JSON_WRITER_H
#define JW_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JW_MAX_DEPTH 32

typedef struct jw_writer {
    FILE *out;
    int depth;
    bool need_comma[JW_MAX_DEPTH];
} jw_writer;

void jw_init(jw_writer *j, FILE *out);
void jw_begin_object(jw_writer *j);
void jw_end_object(jw_writer *j);
void jw_begin_array(jw_writer *j);
void jw_end_array(jw_writer *j);
void jw_key(jw_writer *j, const char *key);
void jw_string(jw_writer *j, const char *s);
void jw_int(jw_writer *j, int64_t v);
void jw_uint(jw_writer *j, uint64_t v);
/* A finite number with 9 significant digits; null when not finite. */
void jw_number(jw_writer *j, double v);
void jw_bool(jw_writer *j, bool v);
void jw_null(jw_writer *j);
/* An int that is null when equal to none_value. */
void jw_int_or_null(jw_writer *j, int64_t v, int64_t none_value);
/* An unsigned int that is null when 0; a string that is null when NULL. */
void jw_uint_or_null(jw_writer *j, uint64_t v);
void jw_string_or_null(jw_writer *j, const char *s);
/* A tri-state (-1 unknown → null). */
void jw_tristate(jw_writer *j, int v);

#endif
