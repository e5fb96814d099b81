/* channel.h — the harness side of the ground-truth channel:
 * reading newline-terminated JSON messages with a deadline and sending
 * "continue". */
#ifndef CF_CHANNEL_H
#define CF_CHANNEL_H

#include <stddef.h>

#include <json-c/json.h>

typedef struct cf_linebuf {
    char *buf;
    size_t len, cap;
    size_t consumed;       /* bytes of the previously returned line (+ '\n') */
    size_t scanned;        /* bytes already searched for '\n' */
} cf_linebuf;

void cf_linebuf_init(cf_linebuf *lb);
void cf_linebuf_free(cf_linebuf *lb);

/* Reads one line from fd (without its '\n', NUL-terminated, valid until the
 * next call).  Returns CF_OK, CF_E_EOF (remaining partial data, if any, is
 * returned in *line and *len), CF_E_TIMEOUT at the monotonic deadline,
 * CF_E_INTERRUPTED, CF_E_LIMIT (line longer than CF_MAX_LINE_BYTES),
 * CF_E_NOMEM or CF_E_IO. */
int cf_linebuf_read(cf_linebuf *lb, int fd, double deadline, char **line, size_t *len);

/* Rewrites lone surrogate escapes (\udXXX not part of a pair) of JSON
 * text in place into their 3-byte encoding, the form libframeproof reports
 * them in (json-c would turn them into U+FFFD).  Other escapes, escaped
 * backslashes included, are left alone; the text only shrinks and is
 * NUL-terminated at the returned length (s must have room for len + 1
 * bytes). */
size_t cf_fix_lone_surrogates(char *s, size_t len);

/* Parses one channel line into a JSON object.  Lone surrogate escapes
 * (\udXXX not part of a pair) are first turned into their 3-byte
 * encoding, the form libframeproof reports them in.  On CF_E_FORMAT, err
 * describes the problem and quotes the (truncated) line. */
int cf_channel_parse(char *line, size_t len, json_object **out, char *err, size_t errlen);

/* Writes "continue\n"; CF_E_IO if the target is gone. */
int cf_channel_continue(int fd);

/* Writes one command line (word + "\n", e.g. "stop" in live mode); CF_E_IO
 * if the target is gone, CF_E_LIMIT for a word longer than
 * CF_CHANNEL_WORD_MAX. */
int cf_channel_send(int fd, const char *word);

#endif
