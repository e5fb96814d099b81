/* channel.c — line reading with deadlines and JSON decoding of the
 * ground-truth channel (see conform_channel.h). */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "channel.h"
#include "interrupt.h"
#include "strbuf.h"
#include "conform.h"
#include "util.h"

#define READ_CHUNK 65536u

void cf_linebuf_init(cf_linebuf *lb)
{
    memset(lb, 0, sizeof *lb);
}

void cf_linebuf_free(cf_linebuf *lb)
{
    free(lb->buf);
    cf_linebuf_init(lb);
}

static void drop_consumed(cf_linebuf *lb)
{
    if (!lb->consumed)
        return;
    memmove(lb->buf, lb->buf + lb->consumed, lb->len - lb->consumed);
    lb->len -= lb->consumed;
    lb->scanned = 0;
    lb->consumed = 0;
}

static int grow(cf_linebuf *lb)
{
    if (lb->cap - lb->len > READ_CHUNK)
        return CF_OK;
    size_t cap = lb->cap ? lb->cap * 2 : 2 * READ_CHUNK;
    if (cap > CF_MAX_LINE_BYTES + 2 * READ_CHUNK)
        cap = CF_MAX_LINE_BYTES + 2 * READ_CHUNK;
    if (cap <= lb->cap)
        return CF_E_LIMIT;
    char *p = realloc(lb->buf, cap);
    if (!p)
        return CF_E_NOMEM;
    lb->buf = p;
    lb->cap = cap;
    return CF_OK;
}

int cf_linebuf_read(cf_linebuf *lb, int fd, double deadline, char **line, size_t *len)
{
    drop_consumed(lb);
    for (;;) {
        char *nl = lb->len > lb->scanned ? memchr(lb->buf + lb->scanned, '\n', lb->len - lb->scanned) : NULL;
        if (nl) {
            /* The newline may arrive in the read that passed the limit. */
            if ((size_t)(nl - lb->buf) > CF_MAX_LINE_BYTES)
                return CF_E_LIMIT;
            *nl = '\0';
            *line = lb->buf;
            *len = (size_t)(nl - lb->buf);
            lb->consumed = *len + 1;
            return CF_OK;
        }
        lb->scanned = lb->len;
        if (lb->len > CF_MAX_LINE_BYTES)
            return CF_E_LIMIT;
        if (cf_interrupted())
            return CF_E_INTERRUPTED;
        double left = deadline - cf_now();
        if (left <= 0)
            return CF_E_TIMEOUT;
        int ms = left * 1000.0 > CF_POLL_SLICE_MS ? CF_POLL_SLICE_MS : (int)(left * 1000.0) + 1;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = poll(&pfd, 1, ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return CF_E_IO;
        if (r == 0)
            continue;
        int rc = grow(lb);
        if (rc)
            return rc;
        ssize_t got = read(fd, lb->buf + lb->len, lb->cap - lb->len - 1);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got < 0)
            return CF_E_IO;
        if (got == 0) {
            lb->buf[lb->len] = '\0';
            *line = lb->buf;
            *len = lb->len;
            lb->consumed = lb->len;
            return CF_E_EOF;
        }
        lb->len += (size_t)got;
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The code unit of a \uXXXX escape at p (p[0] == '\\'), or -1. */
static long escape_at(const char *p, size_t avail)
{
    if (avail < 6 || p[0] != '\\' || p[1] != 'u')
        return -1;
    long v = 0;
    for (int i = 2; i < 6; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

size_t cf_fix_lone_surrogates(char *s, size_t len)
{
    size_t r = 0, w = 0;
    while (r < len) {
        if (s[r] != '\\' || r + 1 >= len) {
            s[w++] = s[r++];
            continue;
        }
        long cu = escape_at(s + r, len - r);
        if (cu < 0xD800 || cu > 0xDFFF) {
            /* Any other escape: copy both characters so that an escaped
             * backslash is never taken for the start of an escape. */
            s[w++] = s[r++];
            s[w++] = s[r++];
            continue;
        }
        if (cu <= 0xDBFF) {
            long next = escape_at(s + r + 6, len - r - 6);
            if (next >= 0xDC00 && next <= 0xDFFF) {
                memmove(s + w, s + r, 12);
                w += 12;
                r += 12;
                continue;
            }
        }
        s[w++] = (char)0xED;
        s[w++] = (char)(0x80 | ((cu >> 6) & 0x3F));
        s[w++] = (char)(0x80 | (cu & 0x3F));
        r += 6;
    }
    s[w] = '\0';
    return w;
}

static void quote_preview(const char *line, size_t len, char *err, size_t errlen, const char *what)
{
    cf_strbuf sb;
    cf_sb_init(&sb);
    size_t n = len > CF_PREVIEW_BYTES ? CF_PREVIEW_BYTES : len;
    cf_sb_append_sanitized(&sb, line, n);
    snprintf(err, errlen, "%s: \"%s\"%s (%zu bytes)", what, cf_sb_str(&sb), n < len ? "..." : "", len);
    cf_sb_free(&sb);
}

int cf_channel_parse(char *line, size_t len, json_object **out, char *err, size_t errlen)
{
    *out = NULL;
    if (memchr(line, '\0', len)) {
        quote_preview(line, len, err, errlen, "non-JSON line from target (NUL byte)");
        return CF_E_FORMAT;
    }
    /* The fix-up only rewrites \udXXX escapes: valid JSON stays valid and
     * an invalid line stays recognisable in the error message. */
    size_t fixed_len = cf_fix_lone_surrogates(line, len);
    json_tokener *tok = json_tokener_new();
    if (!tok) {
        snprintf(err, errlen, "out of memory");
        return CF_E_NOMEM;
    }
    json_object *obj = json_tokener_parse_ex(tok, line, (int)fixed_len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    while (end < fixed_len && (line[end] == ' ' || line[end] == '\t' || line[end] == '\r'))
        end++;
    if (!obj || jerr != json_tokener_success || end < fixed_len) {
        json_object_put(obj);
        quote_preview(line, fixed_len, err, errlen, "non-JSON line from target");
        return CF_E_FORMAT;
    }
    if (!json_object_is_type(obj, json_type_object)) {
        json_object_put(obj);
        quote_preview(line, fixed_len, err, errlen, "channel line is not a JSON object");
        return CF_E_FORMAT;
    }
    *out = obj;
    return CF_OK;
}

int cf_channel_send(int fd, const char *word)
{
    char msg[CF_CHANNEL_WORD_MAX + 2];
    size_t n = strlen(word);
    if (n > CF_CHANNEL_WORD_MAX)
        return CF_E_LIMIT;
    memcpy(msg, word, n);
    msg[n++] = '\n';
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, msg + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return CF_E_IO;
        done += (size_t)w;
    }
    return CF_OK;
}

int cf_channel_continue(int fd)
{
    return cf_channel_send(fd, "continue");
}
