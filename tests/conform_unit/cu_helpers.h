/* cu_helpers.h — shared helpers of the conformance-library unit tests:
 * fixture files, hand-built frames and samples, JSON assertions. */
#ifndef CU_HELPERS_H
#define CU_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "sample.h"

/* "$FP_TEST_DATA/rel" (real captured data) and "$FP_CU_DATA/rel" (this
 * suite's fixtures); fail the test when the path does not fit. */
void cu_test_data(char *out, size_t outlen, const char *rel);
void cu_fixture(char *out, size_t outlen, const char *rel);

/* The whole file, NUL-terminated (free() it); fails the test if unreadable. */
char *cu_read_file(const char *path, size_t *len);

/* Parses JSON text; fails the test on a syntax error. */
json_object *cu_json(const char *text);

/* Fails with both texts unless got equals the JSON text `expected`. */
void cu_assert_json(json_object *got, const char *expected);

/* A python frame of one line: name == function, end_line == line,
 * end_column == column + width. */
cf_frame cu_frame(const char *function, const char *file, int32_t line, int32_t column, int32_t width);

/* Appends a thread with these frames (innermost first) to s and returns
 * it (valid until the next append) for the test to set more fields. */
cf_thread *cu_add_thread(cf_sample *s, uint64_t native_id, uint64_t thread_id, const cf_frame *frames, size_t n);

#endif
