/* fuzz_strings.c — the str and bytes readers (pystr.c) over arbitrary object
 * bytes, for every layout: the built-in 3.11 and 3.12 tables and the real
 * _Py_DebugOffsets tables of the 3.13+ interpreters (tables/).
 *
 * Each input builds a memory image holding a minimal attachable runtime
 * (the layout's table, an interpreter), a type object whose tp_name is
 * "str", "bytes" or a near miss, and the object under test; a session is
 * attached to it through the public fp_session_attach_reader and the
 * internal fpi_read_str / fpi_read_bytes are called on the object.
 *
 * Input: [0] layout, [1] flags, [2..4) declared length (LE), [4] kind bits,
 * [5] n, then n (<= 64) bytes XORed onto the object header, then payload
 * (the character data).
 *
 * Oracle (a reference decoder written here): if the reader succeeds, its
 * output equals the reference decoding of the same memory; if the object is
 * a well-formed str/bytes of the right type whose every byte is present,
 * the reader succeeds.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz_common.h"
#include "debug_offsets.h"
#include "frameproof/frameproof.h"
#include "frameproof/image.h"
#include "layout.h"
#include "session.h"
#include "tables/debug_offsets_tables.h"

#define HDR_OFF 6
#define MAX_MASK 64
#define MAX_PAYLOAD (1u << 20)

#define F_BYTES 0x01u      /* read a bytes object, not a str */
#define F_RAW_TYPE 0x02u   /* keep ob_type as masked, do not point it at the type */
#define F_NEAR_MISS 0x04u  /* the type's name is a near miss of the right one */
#define F_NONCOMPACT 0x08u /* str data lives in its own region, behind a pointer */
#define F_ASCII 0x10u      /* set the str's ascii bit */

#define RT_ADDR 0x10000000ull
#define INTERP_ADDR 0x20000000ull
#define TYPE_ADDR 0x30000000ull
#define NAME_ADDR 0x30001000ull
#define OBJ_ADDR 0x40000000ull
#define DATA_ADDR 0x50000000ull
#define NAME_FIELD 16
#define STR_HEADER_ROOM 256
#define MAX_CODE_POINT 0x10FFFFu

#define HEX_311 0x030b00f0u
#define HEX_312 0x030c00f0u
#define BUILTIN_LAYOUTS 2u

/* The memory the image holds, for the reference decoder. */
typedef struct mem_region {
    uint64_t addr;
    const uint8_t *bytes;
    size_t len;
} mem_region;

typedef struct memory {
    mem_region r[8];
    size_t n;
} memory;

static bool mem_read(const memory *m, uint64_t addr, size_t len, uint8_t *out)
{
    for (size_t i = 0; i < m->n; i++) {
        const mem_region *r = &m->r[i];
        if (addr >= r->addr && addr - r->addr <= r->len && len <= r->len - (addr - r->addr)) {
            if (len)
                memcpy(out, r->bytes + (addr - r->addr), len);
            return true;
        }
    }
    return len == 0;
}

static size_t utf8_put(uint8_t *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | cp >> 6);
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | cp >> 12);
        o[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | cp >> 18);
    o[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Reference str decoding.  Returns true with a malloc'd result when the
 * memory holds a valid str (the type is not examined). */
static bool ref_str(const fpi_layout *l, const memory *m, uint8_t **out, size_t *outlen)
{
    uint8_t h[STR_HEADER_ROOM];
    size_t ascii_size = (size_t)l->uni_ascii_size, compact_size = (size_t)l->uni_compact_size;
    if (compact_size + 8 > sizeof h || !mem_read(m, OBJ_ADDR, ascii_size, h))
        return false;
    int64_t length = (int64_t)fpi_le_get_u64(h + l->uni_length);
    uint32_t state = fpi_le_get_u32(h + l->uni_state);
    unsigned kind = state >> l->uni_kind_shift & 7u;
    bool compact = state >> l->uni_compact_bit & 1u, ascii = state >> l->uni_ascii_bit & 1u;
    if (length < 0 || length > (int64_t)FPI_MAX_STRING_CHARS)
        return false;
    if (!(kind == 1 || kind == 2 || kind == 4) || (ascii && kind != 1))
        return false;
    uint64_t data;
    if (compact) {
        data = OBJ_ADDR + (ascii ? ascii_size : compact_size);
    } else {
        if (!mem_read(m, OBJ_ADDR, compact_size + 8, h))
            return false;
        data = fpi_le_get_u64(h + compact_size);
    }
    size_t nbytes = (size_t)length * kind;
    uint8_t *raw = malloc(nbytes + 1), *o = malloc((size_t)length * 4 + 1);
    size_t n = 0;
    bool ok = raw && o && data != 0 && mem_read(m, data, nbytes, raw);
    for (int64_t i = 0; ok && i < length; i++) {
        uint32_t cp = kind == 1 ? raw[i] : kind == 2 ? fpi_le_get_u16(raw + 2 * i) : fpi_le_get_u32(raw + 4 * i);
        if ((ascii && cp >= 0x80) || cp > MAX_CODE_POINT)
            ok = false;
        else
            n += utf8_put(o + n, cp);
    }
    free(raw);
    if (!ok || n > FPI_MAX_STRING_BYTES) {
        free(o);
        return false;
    }
    *out = o;
    *outlen = n;
    return true;
}

static bool ref_bytes(const fpi_layout *l, const memory *m, size_t max, uint8_t **out, size_t *outlen)
{
    uint8_t h[STR_HEADER_ROOM];
    if ((size_t)l->bytes_sval > sizeof h || !mem_read(m, OBJ_ADDR, (size_t)l->bytes_sval, h))
        return false;
    int64_t size = (int64_t)fpi_le_get_u64(h + l->ob_size);
    if (size < 0 || (uint64_t)size > max)
        return false;
    uint8_t *o = malloc((size_t)size + 1);
    if (!o || !mem_read(m, OBJ_ADDR + (uint64_t)l->bytes_sval, (size_t)size, o)) {
        free(o);
        return false;
    }
    *out = o;
    *outlen = (size_t)size;
    return true;
}

/* Layout number `sel`: fills *l and the attach description. */
static bool pick_layout(unsigned sel, fpi_layout *l, fp_target_desc *d, uint8_t *table)
{
    memset(d, 0, sizeof *d);
    memset(table, 0, FPI_DEBUG_OFFSETS_READ);
    if (sel < BUILTIN_LAYOUTS) {
        *l = *(sel == 0 ? fpi_layout_builtin_311() : fpi_layout_builtin_312());
        d->hexversion = sel == 0 ? HEX_311 : HEX_312;
        return true;
    }
    memcpy(table, fuzz_tables[sel - BUILTIN_LAYOUTS].bytes, FUZZ_TABLE_BYTES);
    fpi_errbuf eb;
    if (fpi_debug_offsets_parse(table, FPI_DEBUG_OFFSETS_READ, l, &eb) != FP_OK)
        return false; /* cannot happen for a captured table */
    return true;
}

static void put_ptr(uint8_t *buf, size_t buflen, int32_t off, uint64_t v)
{
    if (off >= 0 && (size_t)off + 8 <= buflen)
        fpi_le_put_u64(buf + off, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HDR_OFF)
        return 0;
    unsigned nlayouts = BUILTIN_LAYOUTS + (unsigned)FUZZ_TABLE_COUNT;
    unsigned sel = data[0] % nlayouts, flags = data[1];
    uint64_t length = fpi_le_get_u16(data + 2);
    unsigned kindbits = data[4] & 7u;
    size_t nmask = data[5] % (MAX_MASK + 1);
    if (size < HDR_OFF + nmask)
        return 0;
    const uint8_t *mask = data + HDR_OFF;
    const uint8_t *payload = data + HDR_OFF + nmask;
    size_t npayload = size - HDR_OFF - nmask;
    if (npayload > MAX_PAYLOAD)
        npayload = MAX_PAYLOAD;

    fpi_layout l;
    fp_target_desc desc;
    uint8_t *table = malloc(FPI_DEBUG_OFFSETS_READ);
    if (!table)
        return 0;
    if (!pick_layout(sel, &l, &desc, table)) {
        free(table);
        return 0;
    }
    bool is_bytes = flags & F_BYTES, compact = !(flags & F_NONCOMPACT), ascii = flags & F_ASCII;

    /* The object header. */
    size_t hlen;
    if (is_bytes)
        hlen = (size_t)l.bytes_sval;
    else if (compact)
        hlen = (size_t)(ascii ? l.uni_ascii_size : l.uni_compact_size);
    else
        hlen = (size_t)l.uni_compact_size + 8;
    size_t objlen = hlen + (compact || is_bytes ? npayload : 0);
    uint8_t *obj = calloc(1, objlen ? objlen : 1);
    fp_image_builder *b = NULL;
    fp_image *img = NULL;
    fp_session *s = NULL;
    uint8_t *got = NULL, *want = NULL;
    if (!obj)
        goto out;
    if (is_bytes) {
        fpi_le_put_u64(obj + l.ob_size, length);
    } else {
        uint32_t state = kindbits << l.uni_kind_shift | (uint32_t)compact << l.uni_compact_bit |
                         (uint32_t)ascii << l.uni_ascii_bit;
        fpi_le_put_u64(obj + l.uni_length, length);
        fpi_le_put_u32(obj + l.uni_state, state);
        if (!compact)
            fpi_le_put_u64(obj + l.uni_compact_size, DATA_ADDR);
    }
    for (size_t i = 0; i < nmask && i < hlen; i++)
        obj[i] ^= mask[i];
    if (!(flags & F_RAW_TYPE))
        put_ptr(obj, hlen, l.ob_type, TYPE_ADDR);
    if (compact || is_bytes)
        memcpy(obj + hlen, payload, npayload);

    /* The rest of the image: runtime, interpreter, type and its name. */
    size_t rtlen = desc.hexversion ? (size_t)l.rt_interpreters_head + 8 : FPI_DEBUG_OFFSETS_READ;
    uint8_t *rt = table; /* the table itself for 3.13+, zeros + a pointer for 3.11/3.12 */
    put_ptr(rt, FPI_DEBUG_OFFSETS_READ, l.rt_interpreters_head, INTERP_ADDR);
    uint8_t interp[FPI_MAX_STRUCT_READ] = {0};
    size_t interplen = (size_t)l.interp_threads_head + 8;
    uint8_t type[FPI_MAX_STRUCT_READ] = {0};
    size_t typelen = (size_t)l.tp_name + 8;
    put_ptr(type, sizeof type, l.tp_name, NAME_ADDR);
    uint8_t name[NAME_FIELD] = {0};
    const char *tname = is_bytes ? (flags & F_NEAR_MISS ? "byte" : "bytes") : (flags & F_NEAR_MISS ? "strs" : "str");
    memcpy(name, tname, strlen(tname));
    if (interplen > sizeof interp || typelen > sizeof type || rtlen > FPI_DEBUG_OFFSETS_READ)
        goto out;

    fp_image_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.hexversion = desc.hexversion;
    meta.runtime_addr = RT_ADDR;
    if (fp_image_builder_new(&meta, &b) || fp_image_builder_add_region(b, RT_ADDR, rt, rtlen) ||
        fp_image_builder_add_region(b, INTERP_ADDR, interp, interplen) ||
        fp_image_builder_add_region(b, TYPE_ADDR, type, typelen) ||
        fp_image_builder_add_region(b, NAME_ADDR, name, sizeof name) ||
        fp_image_builder_add_region(b, OBJ_ADDR, obj, objlen) ||
        (!compact && !is_bytes && fp_image_builder_add_region(b, DATA_ADDR, payload, npayload)))
        goto out;
    uint8_t *ibuf = NULL;
    size_t ilen = 0;
    if (fp_image_builder_serialize(b, &ibuf, &ilen, NULL, 0))
        goto out;
    int rc = fp_image_open_mem(ibuf, ilen, &img, NULL, 0);
    free(ibuf);
    FUZZ_CHECK(rc == FP_OK, "a built image does not parse (%d)", rc);
    fp_reader rd;
    fp_reader_open_image(img, &rd);
    fp_image_get_target(img, &desc);
    if (fp_session_new(NULL, &s))
        goto out;
    rc = fp_session_attach_reader(s, &rd, &desc);
    FUZZ_CHECK(rc == FP_OK, "cannot attach to the synthetic runtime: %s", fp_session_get_errmsg(s));

    memory m = {.n = 0};
    m.r[m.n++] = (mem_region){RT_ADDR, rt, rtlen};
    m.r[m.n++] = (mem_region){INTERP_ADDR, interp, interplen};
    m.r[m.n++] = (mem_region){TYPE_ADDR, type, typelen};
    m.r[m.n++] = (mem_region){NAME_ADDR, name, sizeof name};
    m.r[m.n++] = (mem_region){OBJ_ADDR, obj, objlen};
    if (!compact && !is_bytes)
        m.r[m.n++] = (mem_region){DATA_ADDR, payload, npayload};
    bool right_type = !(flags & F_NEAR_MISS) && fpi_le_get_u64(obj + l.ob_type) == TYPE_ADDR && hlen >= (size_t)l.ob_type + 8;
    size_t ngot = 0, nwant = 0;
    bool ref_ok;
    if (is_bytes) {
        rc = fpi_read_bytes(s, OBJ_ADDR, FPI_LINETABLE_MAX_BYTES, &got, &ngot);
        ref_ok = ref_bytes(&s->layout, &m, FPI_LINETABLE_MAX_BYTES, &want, &nwant);
    } else {
        char *str = NULL;
        rc = fpi_read_str(s, OBJ_ADDR, &str, &ngot);
        got = (uint8_t *)str;
        ref_ok = ref_str(&s->layout, &m, &want, &nwant);
        if (rc == FP_OK)
            FUZZ_CHECK(got[ngot] == 0, "str result is not NUL-terminated");
    }
    FUZZ_CHECK(rc == FP_OK || rc == FP_E_READ || rc == FP_E_CORRUPT || rc == FP_E_LIMIT, "unexpected code %d", rc);
    FUZZ_CHECK_MESSAGE(rc, fp_session_get_errmsg(s));
    if (rc == FP_OK) {
        FUZZ_CHECK(ref_ok, "the reader accepted an object the reference rejects");
        FUZZ_CHECK(ngot == nwant && memcmp(got, want, ngot) == 0, "decoded %zu bytes, reference %zu", ngot, nwant);
    } else if (ref_ok && right_type) {
        FUZZ_CHECK(rc == FP_E_LIMIT, "a valid object was rejected (%d): %s", rc, fp_session_get_errmsg(s));
    }
out:
    free(got);
    free(want);
    fp_session_free(s);
    fp_image_free(img);
    fp_image_builder_free(b);
    free(obj);
    free(table);
    return 0;
}
