/* util.c — clocks, paths, directories, file tails and JSON files
 * for `frameproof conform`. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"
#include "util.h"

const char *cf_strerror(int rc)
{
    switch (rc) {
    case CF_OK: return "success";
    case CF_E_NOMEM: return "out of memory";
    case CF_E_IO: return "I/O error";
    case CF_E_FORMAT: return "malformed input";
    case CF_E_TIMEOUT: return "timed out";
    case CF_E_EOF: return "end of file";
    case CF_E_INTERRUPTED: return "interrupted";
    case CF_E_LIMIT: return "size limit exceeded";
    case CF_E_NOTFOUND: return "not found";
    case CF_E_UNWINDER: return "the unwinder under test failed";
    default: return "unknown error";
    }
}

double cf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cf_path_join(char *out, size_t outlen, const char *a, const char *b)
{
    size_t la = strlen(a);
    const char *sep = (la > 0 && a[la - 1] == '/') ? "" : "/";
    int n = snprintf(out, outlen, "%s%s%s", a, sep, b);
    if (n < 0 || (size_t)n >= outlen)
        return CF_E_LIMIT;
    return CF_OK;
}

int cf_mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return CF_E_IO;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return CF_E_IO;
        buf[i] = saved;
    }
    struct stat st;
    if (stat(path, &st) != 0)
        return CF_E_IO;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return CF_E_IO;
    }
    return CF_OK;
}

int cf_read_tail(const char *path, size_t max, cf_strbuf *out)
{
    int rc = CF_OK;
    char *buf = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CF_OK;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0)
        goto out;
    size_t size = (size_t)st.st_size;
    size_t want = size < max ? size : max;
    buf = malloc(want ? want : 1);
    if (!buf) {
        rc = CF_E_NOMEM;
        goto out;
    }
    ssize_t got = pread(fd, buf, want, (off_t)(size - want));
    if (got <= 0)
        goto out;
    size_t start = 0;
    /* Do not start in the middle of a UTF-8 sequence. */
    while (start < (size_t)got && start < 3 && ((unsigned char)buf[start] & 0xC0) == 0x80)
        start++;
    if (want < size)
        rc = cf_sb_puts(out, "...");
    if (rc == CF_OK)
        rc = cf_sb_append_sanitized(out, buf + start, (size_t)got - start);
out:
    free(buf);
    close(fd);
    return rc;
}

void cf_sanitize_name(const char *name, char *out, size_t outlen)
{
    size_t i = 0;
    if (outlen == 0)
        return;
    for (; name[i] && i + 1 < outlen; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        out[i] = ok ? c : '_';
    }
    out[i] = '\0';
    if (i == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0) {
        if (outlen > 1)
            out[0] = '_';
        if (outlen > 2)
            out[1] = '\0';
    }
}

/* Writes data with lone-surrogate encodings (ED A0-BF xx) replaced by
 * \uXXXX escapes; they only occur inside JSON strings. */
static int write_portable(FILE *f, const char *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    size_t i = 0, start = 0;
    while (i < len) {
        if (p[i] == 0xED && i + 2 < len && (p[i + 1] & 0xE0) == 0xA0 && (p[i + 2] & 0xC0) == 0x80) {
            if (fwrite(p + start, 1, i - start, f) != i - start)
                return CF_E_IO;
            unsigned cp = 0xD000u | ((unsigned)(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
            if (fprintf(f, "\\u%04x", cp) < 0)
                return CF_E_IO;
            i += 3;
            start = i;
        } else {
            i++;
        }
    }
    if (fwrite(p + start, 1, len - start, f) != len - start)
        return CF_E_IO;
    return CF_OK;
}

static int write_atomic(const char *path, const char *data, size_t len, bool portable, char *err,
                        size_t errlen)
{
    char tmp[PATH_MAX];
    int n = snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return CF_E_LIMIT;
    }
    FILE *f = fopen(tmp, "we");
    if (!f) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        return CF_E_IO;
    }
    int rc = portable ? write_portable(f, data, len)
                      : (fwrite(data, 1, len, f) == len ? CF_OK : CF_E_IO);
    if (fclose(f) != 0)
        rc = CF_E_IO;
    if (rc == CF_OK && rename(tmp, path) != 0)
        rc = CF_E_IO;
    if (rc != CF_OK) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    return rc;
}

int cf_json_write_file(const char *path, json_object *obj, bool pretty, bool portable, char *err,
                       size_t errlen)
{
    int flags = JSON_C_TO_STRING_NOSLASHESCAPE | (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                                                         : JSON_C_TO_STRING_PLAIN);
    size_t len = 0;
    const char *text = json_object_to_json_string_length(obj, flags, &len);
    if (!text) {
        snprintf(err, errlen, "cannot serialize %s", path);
        return CF_E_NOMEM;
    }
    char *copy = malloc(len + 1);
    if (!copy) {
        snprintf(err, errlen, "out of memory writing %s", path);
        return CF_E_NOMEM;
    }
    memcpy(copy, text, len);
    copy[len] = '\n';
    int rc = write_atomic(path, copy, len + 1, portable, err, errlen);
    free(copy);
    return rc;
}

int cf_write_text_file(const char *path, const char *text, size_t len, char *err, size_t errlen)
{
    return write_atomic(path, text, len, false, err, errlen);
}

int cf_json_read_file(const char *path, json_object **out, char *err, size_t errlen)
{
    int rc = CF_OK;
    char *data = NULL;
    json_tokener *tok = NULL;
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return errno == ENOENT ? CF_E_NOTFOUND : CF_E_IO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 0 || (uint64_t)st.st_size > INT_MAX) {
        snprintf(err, errlen, "cannot read %s", path);
        rc = CF_E_IO;
        goto out;
    }
    size_t size = (size_t)st.st_size;
    data = malloc(size + 1);
    if (!data) {
        rc = CF_E_NOMEM;
        snprintf(err, errlen, "out of memory reading %s", path);
        goto out;
    }
    size_t have = 0;
    while (have < size) {
        ssize_t n = read(fd, data + have, size - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    data[have] = '\0';
    tok = json_tokener_new();
    if (!tok) {
        rc = CF_E_NOMEM;
        snprintf(err, errlen, "out of memory reading %s", path);
        goto out;
    }
    *out = json_tokener_parse_ex(tok, data, (int)have);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    if (!*out || jerr != json_tokener_success) {
        if (*out) {
            json_object_put(*out);
            *out = NULL;
        }
        snprintf(err, errlen, "%s: invalid JSON: %s",
                 path, jerr == json_tokener_continue ? "unexpected end of file" : json_tokener_error_desc(jerr));
        rc = CF_E_FORMAT;
        goto out;
    }
    if (json_tokener_get_parse_end(tok) < have) {
        size_t end = json_tokener_get_parse_end(tok);
        while (end < have && (data[end] == ' ' || data[end] == '\n' || data[end] == '\t' || data[end] == '\r'))
            end++;
        if (end < have) {
            json_object_put(*out);
            *out = NULL;
            snprintf(err, errlen, "%s: invalid JSON: trailing data", path);
            rc = CF_E_FORMAT;
        }
    }
out:
    if (tok)
        json_tokener_free(tok);
    free(data);
    close(fd);
    return rc;
}

const char *cf_json_str(json_object *obj, const char *key, const char *dflt)
{
    json_object *v;
    if (obj && json_object_object_get_ex(obj, key, &v) && json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return dflt;
}

int64_t cf_json_int(json_object *obj, const char *key, int64_t dflt)
{
    json_object *v;
    if (obj && json_object_object_get_ex(obj, key, &v) && json_object_is_type(v, json_type_int))
        return json_object_get_int64(v);
    return dflt;
}

bool cf_json_bool(json_object *obj, const char *key, bool dflt)
{
    json_object *v;
    if (obj && json_object_object_get_ex(obj, key, &v) && json_object_is_type(v, json_type_boolean))
        return json_object_get_boolean(v);
    return dflt;
}

double cf_json_double(json_object *obj, const char *key, double dflt)
{
    json_object *v;
    if (obj && json_object_object_get_ex(obj, key, &v) &&
        (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
        return json_object_get_double(v);
    return dflt;
}

int cf_json_int32(json_object *v, int32_t null_value, int32_t *out)
{
    if (!v) {
        *out = null_value;
        return CF_OK;
    }
    if (!json_object_is_type(v, json_type_int))
        return CF_E_FORMAT;
    int64_t x = json_object_get_int64(v);
    if (x < INT32_MIN || x > INT32_MAX)
        return CF_E_FORMAT;
    *out = (int32_t)x;
    return CF_OK;
}

json_object *cf_json_array(json_object *obj, const char *key)
{
    json_object *v;
    if (obj && json_object_object_get_ex(obj, key, &v) && json_object_is_type(v, json_type_array))
        return v;
    return NULL;
}

static bool is_name(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '.'))
            return false;
    return true;
}

int cf_json_names(json_object *obj, const char *key, const char *what, char **out, char *err, size_t errlen)
{
    *out = NULL;
    json_object *v;
    if (!obj || !json_object_object_get_ex(obj, key, &v))
        return CF_OK;
    if (!json_object_is_type(v, json_type_array)) {
        snprintf(err, errlen, "%s: \"%s\" must be an array of names", what, key);
        return CF_E_FORMAT;
    }
    size_t n = json_object_array_length(v), len = 1;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(v, i);
        if (!json_object_is_type(e, json_type_string) || !is_name(json_object_get_string(e))) {
            snprintf(err, errlen, "%s: \"%s\" must be an array of names", what, key);
            return CF_E_FORMAT;
        }
        len += strlen(json_object_get_string(e)) + 1;
    }
    char *s = calloc(1, len);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return CF_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(s, " ");
        strcat(s, json_object_get_string(json_object_array_get_idx(v, i)));
    }
    *out = s;
    return CF_OK;
}

const char *cf_names_next(const char **cursor, size_t *len)
{
    const char *p = *cursor;
    if (!p || !*p)
        return NULL;
    *len = strcspn(p, " ");
    *cursor = p + *len + (p[*len] ? 1 : 0);
    return p;
}

bool cf_names_have(const char *names, const char *name)
{
    const size_t n = strlen(name);
    size_t len;
    for (const char *p; (p = cf_names_next(&names, &len));)
        if (len == n && memcmp(p, name, n) == 0)
            return true;
    return false;
}

json_object *cf_json_seconds(double value)
{
    char text[48];
    snprintf(text, sizeof text, "%.3f", value);
    return json_object_new_double_s(strtod(text, NULL), text);
}

int cf_json_add(json_object *obj, const char *key, json_object *val)
{
    if (!val)
        return CF_E_NOMEM;
    if (json_object_object_add(obj, key, val) != 0) {
        json_object_put(val);
        return CF_E_NOMEM;
    }
    return CF_OK;
}

int cf_json_push(json_object *arr, json_object *val)
{
    if (!val)
        return CF_E_NOMEM;
    if (json_object_array_add(arr, val) != 0) {
        json_object_put(val);
        return CF_E_NOMEM;
    }
    return CF_OK;
}
