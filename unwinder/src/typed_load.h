/* typed_load.h — typed loads from bytes copied out of the target: memcpy,
 * so any alignment is fine; inline, as the walk and its read-back make
 * several per frame. */
#ifndef FPI_TYPED_LOAD_H
#define FPI_TYPED_LOAD_H

#include <stdint.h>
#include <string.h>

static inline uint64_t fpi_load_u64(const uint8_t *base, int32_t off)
{
    uint64_t v;
    memcpy(&v, base + off, sizeof v);
    return v;
}

static inline uint32_t fpi_load_u32(const uint8_t *base, int32_t off)
{
    uint32_t v;
    memcpy(&v, base + off, sizeof v);
    return v;
}

static inline uint16_t fpi_load_u16(const uint8_t *base, int32_t off)
{
    uint16_t v;
    memcpy(&v, base + off, sizeof v);
    return v;
}

static inline uint8_t fpi_load_u8(const uint8_t *base, int32_t off)
{
    return base[off];
}

#endif
