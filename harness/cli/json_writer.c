/* json_writer.c — streaming JSON output with correct string escaping. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "json_writer.h"

void fp_json_init(fp_json *j, FILE *out)
{
    memset(j, 0, sizeof *j);
    j->out = out;
}

static void value_prefix(fp_json *j)
{
    if (j->depth > 0 && j->need_comma[j->depth])
        fputc(',', j->out);
    if (j->depth > 0)
        j->need_comma[j->depth] = true;
}

static void open_scope(fp_json *j, char c)
{
    value_prefix(j);
    fputc(c, j->out);
    if (j->depth + 1 < FP_JSON_MAX_DEPTH)
        j->depth++;
    j->need_comma[j->depth] = false;
}

static void close_scope(fp_json *j, char c)
{
    fputc(c, j->out);
    if (j->depth > 0)
        j->depth--;
}

void fp_json_begin_object(fp_json *j) { open_scope(j, '{'); }
void fp_json_end_object(fp_json *j) { close_scope(j, '}'); }
void fp_json_begin_array(fp_json *j) { open_scope(j, '['); }
void fp_json_end_array(fp_json *j) { close_scope(j, ']'); }

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

void fp_json_key(fp_json *j, const char *key)
{
    value_prefix(j);
    write_escaped(j->out, key);
    fputc(':', j->out);
    j->need_comma[j->depth] = false;
}

static void after_value(fp_json *j)
{
    if (j->depth > 0)
        j->need_comma[j->depth] = true;
}

void fp_json_string(fp_json *j, const char *s)
{
    value_prefix(j);
    write_escaped(j->out, s ? s : "");
    after_value(j);
}

void fp_json_int(fp_json *j, int64_t v)
{
    value_prefix(j);
    fprintf(j->out, "%" PRId64, v);
    after_value(j);
}

void fp_json_uint(fp_json *j, uint64_t v)
{
    value_prefix(j);
    fprintf(j->out, "%" PRIu64, v);
    after_value(j);
}

void fp_json_number(fp_json *j, double v)
{
    value_prefix(j);
    if (isfinite(v))
        fprintf(j->out, "%.9g", v);
    else
        fputs("null", j->out);
    after_value(j);
}

void fp_json_bool(fp_json *j, bool v)
{
    value_prefix(j);
    fputs(v ? "true" : "false", j->out);
    after_value(j);
}

void fp_json_null(fp_json *j)
{
    value_prefix(j);
    fputs("null", j->out);
    after_value(j);
}

void fp_json_int_or_null(fp_json *j, int64_t v, int64_t none_value)
{
    if (v == none_value)
        fp_json_null(j);
    else
        fp_json_int(j, v);
}

void fp_json_tristate(fp_json *j, int v)
{
    if (v < 0)
        fp_json_null(j);
    else
        fp_json_bool(j, v != 0);
}
