/* strbuf.h — a growable string buffer with a sticky out-of-memory
 * flag, used to build messages, diffs and report files. */
#ifndef CF_STRBUF_H
#define CF_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct cf_strbuf {
    char *data;
    size_t len, cap;
    bool failed;            /* an allocation failed: contents are truncated */
} cf_strbuf;

void cf_sb_init(cf_strbuf *sb);
void cf_sb_free(cf_strbuf *sb);
void cf_sb_clear(cf_strbuf *sb);

/* Each returns CF_OK, or CF_E_NOMEM (and sets sb->failed). */
int cf_sb_append(cf_strbuf *sb, const char *s, size_t n);
int cf_sb_puts(cf_strbuf *sb, const char *s);
int cf_sb_printf(cf_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends text that may hold anything (a target's stderr, a garbage channel
 * line): valid UTF-8 is kept, other bytes and control characters other than
 * newline and tab become \xNN. */
int cf_sb_append_sanitized(cf_strbuf *sb, const char *s, size_t n);

/* Appends s, or when it is longer than max bytes its first max bytes (cut
 * at a UTF-8 boundary) followed by "...(N bytes)". */
int cf_sb_put_clipped(cf_strbuf *sb, const char *s, size_t max);

/* Sets sb to the formatted text unless it already holds some (the first
 * error wins).  CF_OK, or CF_E_NOMEM. */
int cf_sb_vfirst(cf_strbuf *sb, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* The contents ("" when empty); never NULL. */
const char *cf_sb_str(const cf_strbuf *sb);

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if invalid.
 * With allow_surrogates, 3-byte encodings of U+D800-DFFF are accepted. */
size_t cf_utf8_seq_len(const unsigned char *s, size_t n, bool allow_surrogates);

#endif
