/* little_endian.h — little-endian integers read from and written to bytes,
 * one byte at a time so that neither the host's byte order nor the
 * alignment matters: the memory image format's codec (image_format.h),
 * also used by the fuzz targets to read and build their inputs. */
#ifndef FPI_LITTLE_ENDIAN_H
#define FPI_LITTLE_ENDIAN_H

#include <stdint.h>

static inline uint16_t fpi_le_get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t fpi_le_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t fpi_le_get_u64(const uint8_t *p)
{
    return (uint64_t)fpi_le_get_u32(p) | (uint64_t)fpi_le_get_u32(p + 4) << 32;
}

static inline void fpi_le_put_u32(uint8_t *p, uint32_t v)
{
    for (unsigned i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void fpi_le_put_u64(uint8_t *p, uint64_t v)
{
    for (unsigned i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

#endif
