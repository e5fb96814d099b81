/* pystr.c — reading str (every PEP 393 kind, compact or not, including the
 * free-threaded 3.14+ state layout) and bytes objects from the target, and
 * recognising object types by their tp_name. */
#include <stdlib.h>
#include <string.h>

#include "read.h"
#include "session.h"

#define MAX_UNICODE 0x10FFFFu
#define TPFLAGS_HEAPTYPE (1ull << 9)
#define TYPE_NAME_PROBE 23 /* strlen("async_generator_athrow") + 1 */

static const struct { const char *name; int kind; } known_types[] = {
    {"code", FPI_TYPE_CODE},
    {"str", FPI_TYPE_STR},
    {"bytes", FPI_TYPE_BYTES},
    {"NoneType", FPI_TYPE_NONE},
    {"coroutine", FPI_TYPE_COROUTINE},
    {"int", FPI_TYPE_INT},
    {"async_generator", FPI_TYPE_ASYNC_GEN},
    {"async_generator_asend", FPI_TYPE_ASYNC_GEN_AWAIT},
    {"async_generator_athrow", FPI_TYPE_ASYNC_GEN_AWAIT},
};

int fpi_type_kind(fp_session *s, uint64_t type_addr, int *kind)
{
    for (size_t i = 0; i < s->ntypes; i++) {
        if (s->types[i].addr == type_addr) {
            *kind = s->types[i].kind;
            return FP_OK;
        }
    }
    uint8_t tbuf[8];
    const fpi_layout *l = &s->layout;
    int rc = fpi_read(s, type_addr + (uint64_t)l->tp_name, tbuf, sizeof tbuf);
    if (rc)
        return rc;
    uint64_t name_addr = fpi_load_u64(tbuf, 0);
    char name[FPI_MAX_TYPE_NAME];
    memset(name, 0, sizeof name);
    /* Read the longest known name plus its NUL; tp_name may end right at
     * the end of a mapping, so fall back to one byte at a time. */
    size_t want = TYPE_NAME_PROBE;
    if (fpi_read(s, name_addr, name, want) != FP_OK) {
        for (size_t i = 0; i < want; i++) {
            if ((rc = fpi_read(s, name_addr + i, name + i, 1)))
                return rc;
            if (name[i] == 0)
                break;
        }
    }
    int k = FPI_TYPE_OTHER;
    for (size_t i = 0; i < sizeof known_types / sizeof known_types[0]; i++) {
        size_t n = strlen(known_types[i].name);
        if (memcmp(name, known_types[i].name, n) == 0 && name[n] == 0)
            k = known_types[i].kind;
    }
    /* The built-in coroutine and async generator types are static; a class
     * of the program's own named `coroutine` is a heap type, and no
     * coroutine (an awaitable that is its own iterator leaves such an object
     * where a coroutine awaits).  Where the layout has no tp_flags
     * (3.11-3.13: no task graphs) the name alone is all there is. */
    bool awaited = k == FPI_TYPE_COROUTINE || k == FPI_TYPE_ASYNC_GEN || k == FPI_TYPE_ASYNC_GEN_AWAIT;
    if (awaited && l->tp_flags != FPI_OFF_NONE) {
        if ((rc = fpi_read(s, type_addr + (uint64_t)l->tp_flags, tbuf, sizeof tbuf)))
            return rc;
        if (fpi_load_u64(tbuf, 0) & TPFLAGS_HEAPTYPE)
            k = FPI_TYPE_OTHER;
    }
    if (s->ntypes < FPI_TYPE_CACHE_SLOTS && k != FPI_TYPE_OTHER) {
        s->types[s->ntypes].addr = type_addr;
        s->types[s->ntypes].kind = k;
        s->ntypes++;
    }
    *kind = k;
    return FP_OK;
}

/* Appends code point cp as UTF-8 (lone surrogates as 3-byte sequences, the
 * generalised UTF-8 that JSON writers escape as \uXXXX). */
static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

int fpi_read_str(fp_session *s, uint64_t addr, char **out, size_t *out_len)
{
    const fpi_layout *l = &s->layout;
    uint8_t hdr[FPI_STR_HEADER_MAX];
    size_t hlen = (size_t)l->uni_compact_size + 8;
    if (hlen > sizeof hdr)
        return fpi_err(&s->err, FP_E_CORRUPT, "str header: size %zu is too large", hlen);
    int rc = fpi_read(s, addr, hdr, (size_t)l->uni_ascii_size);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read str object at 0x%llx", (unsigned long long)addr);
    int kind_type;
    rc = fpi_type_kind(s, fpi_load_u64(hdr, l->ob_type), &kind_type);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read the type of the object at 0x%llx", (unsigned long long)addr);
    if (kind_type != FPI_TYPE_STR)
        return fpi_err(&s->err, FP_E_CORRUPT, "object at 0x%llx: not a str", (unsigned long long)addr);
    int64_t length = (int64_t)fpi_load_u64(hdr, l->uni_length);
    uint32_t state = fpi_load_u32(hdr, l->uni_state);
    unsigned kind = (state >> l->uni_kind_shift) & 7u;
    bool compact = (state >> l->uni_compact_bit) & 1u;
    bool ascii = (state >> l->uni_ascii_bit) & 1u;
    if (length < 0 || (uint64_t)length > FPI_MAX_STRING_CHARS)
        return fpi_err(&s->err, length < 0 ? FP_E_CORRUPT : FP_E_LIMIT,
                      "str at 0x%llx: length %lld (limit %u)", (unsigned long long)addr,
                      (long long)length, FPI_MAX_STRING_CHARS);
    if ((kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1))
        return fpi_err(&s->err, FP_E_CORRUPT, "str at 0x%llx: invalid state word 0x%x",
                      (unsigned long long)addr, state);
    uint64_t data;
    if (compact) {
        data = addr + (uint64_t)(ascii ? l->uni_ascii_size : l->uni_compact_size);
    } else {
        rc = fpi_read(s, addr, hdr, hlen);
        if (rc)
            return fpi_err_code(&s->err, rc, "cannot read str object at 0x%llx", (unsigned long long)addr);
        data = fpi_load_u64(hdr, l->uni_compact_size);
    }
    size_t nbytes = (size_t)length * kind;
    uint8_t *raw = malloc(nbytes ? nbytes : 1);
    char *utf8 = malloc((size_t)length * 4 + 1);
    if (!raw || !utf8) {
        free(raw);
        free(utf8);
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: str at 0x%llx (%lld characters)", (unsigned long long)addr,
                       (long long)length);
    }
    rc = fpi_read(s, data, raw, nbytes);
    if (rc) {
        free(raw);
        free(utf8);
        return fpi_err_code(&s->err, rc, "cannot read %zu bytes of str data at 0x%llx", nbytes, (unsigned long long)data);
    }
    size_t o = 0;
    for (int64_t i = 0; i < length; i++) {
        uint32_t cp;
        if (kind == 1) {
            cp = raw[i];
            if (ascii && cp >= 0x80)
                goto corrupt;
        } else if (kind == 2) {
            uint16_t u;
            memcpy(&u, raw + i * 2, 2);
            cp = u;
        } else {
            memcpy(&cp, raw + i * 4, 4);
            if (cp > MAX_UNICODE)
                goto corrupt;
        }
        o += put_utf8(utf8 + o, cp);
    }
    if (o > FPI_MAX_STRING_BYTES) {
        free(raw);
        free(utf8);
        return fpi_err(&s->err, FP_E_LIMIT, "str at 0x%llx: more than %u bytes", (unsigned long long)addr, FPI_MAX_STRING_BYTES);
    }
    utf8[o] = 0;
    free(raw);
    *out = utf8;
    if (out_len)
        *out_len = o;
    return FP_OK;
corrupt:
    free(raw);
    free(utf8);
    return fpi_err(&s->err, FP_E_CORRUPT, "str at 0x%llx: invalid code point", (unsigned long long)addr);
}

int fpi_read_bytes(fp_session *s, uint64_t addr, size_t max, uint8_t **out, size_t *out_len)
{
    const fpi_layout *l = &s->layout;
    uint8_t hdr[FPI_STR_HEADER_MAX];
    if ((size_t)l->bytes_sval > sizeof hdr)
        return fpi_err(&s->err, FP_E_CORRUPT, "bytes header: too large");
    int rc = fpi_read(s, addr, hdr, (size_t)l->bytes_sval);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read bytes object at 0x%llx", (unsigned long long)addr);
    int kind_type;
    rc = fpi_type_kind(s, fpi_load_u64(hdr, l->ob_type), &kind_type);
    if (rc)
        return fpi_err_code(&s->err, rc, "cannot read the type of the object at 0x%llx", (unsigned long long)addr);
    if (kind_type != FPI_TYPE_BYTES)
        return fpi_err(&s->err, FP_E_CORRUPT, "object at 0x%llx: not bytes", (unsigned long long)addr);
    int64_t size = (int64_t)fpi_load_u64(hdr, l->ob_size);
    if (size < 0 || (uint64_t)size > max)
        return fpi_err(&s->err, size < 0 ? FP_E_CORRUPT : FP_E_LIMIT, "bytes at 0x%llx: size %lld (limit %zu)",
                      (unsigned long long)addr, (long long)size, max);
    uint8_t *buf = malloc(size ? (size_t)size : 1);
    if (!buf)
        return fpi_err(&s->err, FP_E_NOMEM, "out of memory: bytes at 0x%llx (%lld bytes)", (unsigned long long)addr,
                       (long long)size);
    rc = fpi_read(s, addr + (uint64_t)l->bytes_sval, buf, (size_t)size);
    if (rc) {
        free(buf);
        return fpi_err_code(&s->err, rc, "cannot read %lld bytes at 0x%llx", (long long)size, (unsigned long long)addr);
    }
    *out = buf;
    *out_len = (size_t)size;
    return FP_OK;
}
