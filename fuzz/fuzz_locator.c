/* fuzz_locator.c — the locator's parsers of untrusted input: ELF files
 * (fpi_elf_inspect_mem, over libelf) and /proc/PID/maps text (fpi_maps_parse,
 * fpi_maps_contains).
 *
 * Input: ELF bytes, then optionally the separator SEPARATOR and maps text.
 * Without a separator the whole input goes to both parsers.  Checked: no
 * crash or over-read, documented codes only, and a parsed maps table whose
 * entries are well-formed (start <= end, bounded paths) and whose
 * fpi_maps_contains answers agree with a linear reference.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz_common.h"
#include "frameproof/frameproof.h"
#include "locate_elf.h"
#include "maps.h"

#define SEPARATOR "\n--FPSEP--\n"
#define PROBES_PER_MAPPING 4
#define MAX_PROBED 64

static const uint8_t *find_sep(const uint8_t *data, size_t size)
{
    size_t k = sizeof SEPARATOR - 1;
    for (size_t i = 0; i + k <= size; i++)
        if (data[i] == SEPARATOR[0] && memcmp(data + i, SEPARATOR, k) == 0)
            return data + i;
    return NULL;
}

static void fuzz_elf(const uint8_t *data, size_t size)
{
    fpi_elf_info ei;
    fpi_errbuf eb;
    eb.msg[0] = 0;
    int rc = fpi_elf_inspect_mem(data, size, &ei, &eb);
    FUZZ_CHECK(rc == FP_OK || rc == FP_E_FORMAT || rc == FP_E_UNSUPPORTED || rc == FP_E_LIMIT,
               "ELF inspection returned %d", rc);
    FUZZ_CHECK(memchr(eb.msg, 0, sizeof eb.msg) != NULL, "unterminated message");
    FUZZ_CHECK_MESSAGE(rc, eb.msg);
}

/* Reference for fpi_maps_contains: the first readable mapping holding addr
 * decides. */
static bool ref_contains(const fpi_maps *m, uint64_t addr, uint64_t len)
{
    for (size_t i = 0; i < m->n; i++) {
        const fpi_mapping *e = &m->v[i];
        if (!e->readable || addr < e->start || addr >= e->end)
            continue;
        return e->end - addr >= len;
    }
    return false;
}

static void fuzz_maps(const uint8_t *data, size_t size)
{
    fpi_maps m;
    fpi_errbuf eb;
    eb.msg[0] = 0;
    int rc = fpi_maps_parse((const char *)data, size, &m, &eb);
    FUZZ_CHECK(rc == FP_OK || rc == FP_E_FORMAT || rc == FP_E_LIMIT || rc == FP_E_NOMEM, "maps parse returned %d",
               rc);
    FUZZ_CHECK_MESSAGE(rc, eb.msg);
    if (rc) {
        FUZZ_CHECK(m.v == NULL && m.n == 0, "a failed parse left %zu entries", m.n);
        return;
    }
    for (size_t i = 0; i < m.n; i++) {
        const fpi_mapping *e = &m.v[i];
        FUZZ_CHECK(e->start <= e->end, "mapping %zu: 0x%llx > 0x%llx", i, (unsigned long long)e->start,
                   (unsigned long long)e->end);
        if (e->path)
            FUZZ_CHECK(strlen(e->path) <= FPI_MAPS_MAX_PATH, "mapping %zu: path too long", i);
        else
            FUZZ_CHECK(!e->deleted, "mapping %zu: deleted without a path", i);
    }
    for (size_t i = 0; i < m.n && i < MAX_PROBED; i++) {
        const fpi_mapping *e = &m.v[i];
        uint64_t probes[PROBES_PER_MAPPING][2] = {
            {e->start, 1}, {e->end - (e->end > e->start), 1}, {e->start, e->end - e->start}, {e->end, 1}};
        for (size_t k = 0; k < PROBES_PER_MAPPING; k++) {
            bool got = fpi_maps_contains(&m, probes[k][0], probes[k][1]);
            bool want = ref_contains(&m, probes[k][0], probes[k][1]);
            FUZZ_CHECK(got == want, "contains(0x%llx, %llu) = %d, reference %d", (unsigned long long)probes[k][0],
                       (unsigned long long)probes[k][1], got, want);
        }
    }
    fpi_maps_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *sep = find_sep(data, size);
    if (sep) {
        size_t k = sizeof SEPARATOR - 1;
        fuzz_elf(data, (size_t)(sep - data));
        fuzz_maps(sep + k, size - (size_t)(sep - data) - k);
    } else {
        fuzz_elf(data, size);
        fuzz_maps(data, size);
    }
    return 0;
}
