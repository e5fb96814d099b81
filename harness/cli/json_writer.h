/* json_writer.h — a small streaming JSON writer for the CLI's outputs
 * (UTF-8 text; lone surrogates from Python strings become \uXXXX). */
#ifndef FP_JSON_WRITER_H
#define FP_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define FP_JSON_MAX_DEPTH 32

typedef struct fp_json {
    FILE *out;
    int depth;
    bool need_comma[FP_JSON_MAX_DEPTH];
} fp_json;

void fp_json_init(fp_json *j, FILE *out);
void fp_json_begin_object(fp_json *j);
void fp_json_end_object(fp_json *j);
void fp_json_begin_array(fp_json *j);
void fp_json_end_array(fp_json *j);
void fp_json_key(fp_json *j, const char *key);
void fp_json_string(fp_json *j, const char *s);
void fp_json_int(fp_json *j, int64_t v);
void fp_json_uint(fp_json *j, uint64_t v);
/* A finite number with 9 significant digits; null when not finite. */
void fp_json_number(fp_json *j, double v);
void fp_json_bool(fp_json *j, bool v);
void fp_json_null(fp_json *j);
/* An int that is null when equal to none_value. */
void fp_json_int_or_null(fp_json *j, int64_t v, int64_t none_value);
/* A tri-state (-1 unknown → null). */
void fp_json_tristate(fp_json *j, int v);

#endif
