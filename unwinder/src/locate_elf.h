/* locate_elf.h — what the locator needs from one ELF file (via libelf). */
#ifndef FPI_LOCATE_ELF_H
#define FPI_LOCATE_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fp_error.h"
#include "fpi_limits.h"

typedef struct fpi_elf_info {
    bool has_section;          /* .PyRuntime */
    uint64_t section_addr, section_size;
    bool has_runtime_sym;      /* _PyRuntime */
    uint64_t runtime_sym;
    bool has_version_sym;      /* Py_Version */
    uint64_t version_sym;
    bool debug_build;          /* a Py_REF_DEBUG-only symbol is exported */
    bool has_asyncio_section;  /* .AsyncioDebug: asyncio's C module's layout (3.14+) */
    uint64_t asyncio_section_addr, asyncio_section_size;
    bool has_load;             /* a PT_LOAD with file offset 0 was found */
    uint64_t load_vaddr;       /* its p_vaddr rounded down to p_align */
} fpi_elf_info;

/* Inspects an ELF image held in memory (the buffer is not modified). */
int fpi_elf_inspect_mem(const void *image, size_t len, fpi_elf_info *out, fpi_errbuf *eb);

/* Inspects the ELF file open on fd. */
int fpi_elf_inspect_fd(int fd, fpi_elf_info *out, fpi_errbuf *eb);

#endif
