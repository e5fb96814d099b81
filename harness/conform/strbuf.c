/* strbuf.c — growable string buffer (see conform_strbuf.h). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "conform.h"

#define SB_MIN_CAP 64u

void cf_sb_init(cf_strbuf *sb)
{
    memset(sb, 0, sizeof *sb);
}

void cf_sb_free(cf_strbuf *sb)
{
    free(sb->data);
    cf_sb_init(sb);
}

void cf_sb_clear(cf_strbuf *sb)
{
    sb->len = 0;
    sb->failed = false;
    if (sb->data)
        sb->data[0] = '\0';
}

static int reserve(cf_strbuf *sb, size_t extra)
{
    if (sb->failed)
        return CF_E_NOMEM;
    if (extra >= SIZE_MAX - sb->len - 1) {
        sb->failed = true;
        return CF_E_NOMEM;
    }
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap)
        return CF_OK;
    size_t cap = sb->cap ? sb->cap : SB_MIN_CAP;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(sb->data, cap);
    if (!p) {
        sb->failed = true;
        return CF_E_NOMEM;
    }
    sb->data = p;
    sb->cap = cap;
    return CF_OK;
}

int cf_sb_append(cf_strbuf *sb, const char *s, size_t n)
{
    int rc = reserve(sb, n);
    if (rc)
        return rc;
    if (n)
        memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
    return CF_OK;
}

int cf_sb_puts(cf_strbuf *sb, const char *s)
{
    return cf_sb_append(sb, s, strlen(s));
}

int cf_sb_printf(cf_strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sb->failed = true;
        return CF_E_NOMEM;
    }
    int rc = reserve(sb, (size_t)n);
    if (rc)
        return rc;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
    return CF_OK;
}

size_t cf_utf8_seq_len(const unsigned char *s, size_t n, bool allow_surrogates)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned min;
    unsigned cp;
    if ((c & 0xE0) == 0xC0) {
        len = 2, min = 0x80, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, min = 0x800, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF)
        return 0;
    if (cp >= 0xD800 && cp <= 0xDFFF && !allow_surrogates)
        return 0;
    return len;
}

int cf_sb_append_sanitized(cf_strbuf *sb, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n) {
            unsigned char c = p[run];
            if (c < 0x20 && c != '\n' && c != '\t')
                break;
            if (c == 0x7F)
                break;
            size_t k = cf_utf8_seq_len(p + run, n - run, false);
            if (k == 0)
                break;
            run += k;
        }
        if (run > i && cf_sb_append(sb, s + i, run - i))
            return CF_E_NOMEM;
        if (run < n && cf_sb_printf(sb, "\\x%02x", p[run]))
            return CF_E_NOMEM;
        i = run < n ? run + 1 : run;
    }
    return sb->failed ? CF_E_NOMEM : CF_OK;
}

int cf_sb_put_clipped(cf_strbuf *sb, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max)
        return cf_sb_append(sb, s, n);
    size_t cut = max;
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    cf_sb_append(sb, s, cut);
    return cf_sb_printf(sb, "...(%zu bytes)", n);
}

const char *cf_sb_str(const cf_strbuf *sb)
{
    return sb->data ? sb->data : "";
}

int cf_sb_vfirst(cf_strbuf *sb, const char *fmt, va_list ap)
{
    if (sb->len)
        return CF_OK;
    char buf[CF_ERRMSG_LEN * 2];
    vsnprintf(buf, sizeof buf, fmt, ap);
    cf_sb_puts(sb, buf);
    return sb->failed ? CF_E_NOMEM : CF_OK;
}
