/* json_writer.c — streaming JSON output with correct string escaping. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "json_writer.h"

void jw_init(jw_writer *j, FILE *out)
{
    memset(j, 0, sizeof *j);
    j->out = out;
}

static void value_prefix(jw_writer *j)
{
    if (j->depth > 0 && j->need_comma[j->depth])
        fputc(',', j->out);
    if (j->depth > 0)
        j->need_comma[j->depth] = true;
}

static void open_scope(jw_writer *j, char c)
{
    value_prefix(j);
    fputc(c, j->out);
    if (j->depth + 1 < JW_MAX_DEPTH)
        j->depth++;
    j->need_comma[j->depth] = false;
}

static void close_scope(jw_writer *j, char c)
{
    fputc(c, j->out);
    if (j->depth > 0)
        j->depth--;
}

void jw_begin_object(jw_writer *j) { open_scope(j, '{'); }
void jw_end_object(jw_writer *j) { close_scope(j, '}'); }
void jw_begin_array(jw_writer *j) { open_scope(j, '['); }
void jw_end_array(jw_writer *j) { close_scope(j, ']'); }

static void write_escaped(FILE *o, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', o);
    while (*p) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', o);
            fputc(c, o);
            p++;
        } else if (c < 0x20) {
            fprintf(o, "\\u%04x", c);
            p++;
        } else if (c == 0xED && (p[1] & 0xE0) == 0xA0 && (p[2] & 0xC0) == 0x80) {
            /* a lone surrogate encoded as 3 bytes: not valid UTF-8 */
            unsigned cp = ((unsigned)(c & 0x0F) << 12) | ((unsigned)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
            fprintf(o, "\\u%04x", cp);
            p += 3;
        } else {
            fputc(c, o);
            p++;
        }
    }
    fputc('"', o);
}

void jw_key(jw_writer *j, const char *key)
{
    value_prefix(j);
    write_escaped(j->out, key);
    fputc(':', j->out);
    j->need_comma[j->depth] = false;
}

static void after_value(jw_writer *j)
{
    if (j->depth > 0)
        j->need_comma[j->depth] = true;
}

void jw_string(jw_writer *j, const char *s)
{
    value_prefix(j);
    write_escaped(j->out, s ? s : "");
    after_value(j);
}

void jw_int(jw_writer *j, int64_t v)
{
    value_prefix(j);
    fprintf(j->out, "%" PRId64, v);
    after_value(j);
}

void jw_uint(jw_writer *j, uint64_t v)
{
    value_prefix(j);
    fprintf(j->out, "%" PRIu64, v);
    after_value(j);
}

void jw_number(jw_writer *j, double v)
{
    value_prefix(j);
    if (isfinite(v))
        fprintf(j->out, "%.9g", v);
    else
        fputs("null", j->out);
    after_value(j);
}

void jw_bool(jw_writer *j, bool v)
{
    value_prefix(j);
    fputs(v ? "true" : "false", j->out);
    after_value(j);
}

void jw_null(jw_writer *j)
{
    value_prefix(j);
    fputs("null", j->out);
    after_value(j);
}

void jw_int_or_null(jw_writer *j, int64_t v, int64_t none_value)
{
    if (v == none_value)
        jw_null(j);
    else
        jw_int(j, v);
}

void jw_uint_or_null(jw_writer *j, uint64_t v)
{
    if (v == 0)
        jw_null(j);
    else
        jw_uint(j, v);
}

void jw_string_or_null(jw_writer *j, const char *s)
{
    if (s)
        jw_string(j, s);
    else
        jw_null(j);
}

void jw_tristate(jw_writer *j, int v)
{
    if (v < 0)
        jw_null(j);
    else
        jw_bool(j, v != 0);
}
