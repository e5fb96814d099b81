/* locate_elf.c — reads the .PyRuntime and .AsyncioDebug sections, the
 * _PyRuntime and Py_Version symbols and the load segment of a python
 * binary, libpython or extension module with libelf, treating the file as
 * untrusted input. */
#include <gelf.h>
#include <libelf.h>
#include <string.h>

#include "frameproof/frameproof.h"
#include "locate_elf.h"

static const char *const DEBUG_SYMBOLS[] = {
    "_Py_GetGlobalRefTotal", /* 3.12+ Py_REF_DEBUG */
    "_Py_GetRefTotal",       /* 3.11 Py_REF_DEBUG */
    "_Py_RefTotal",
};

static void scan_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, fpi_elf_info *out)
{
    if (sh->sh_entsize == 0)
        return;
    Elf_Data *data = elf_getdata(scn, NULL);
    if (!data || !data->d_buf)
        return;
    size_t count = data->d_size / sh->sh_entsize;
    if (count > FPI_ELF_MAX_SYMBOLS)
        count = FPI_ELF_MAX_SYMBOLS;
    for (size_t i = 0; i < count; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(data, (int)i, &sym))
            break;
        if (sym.st_name == 0 || sym.st_shndx == SHN_UNDEF)
            continue;
        const char *name = elf_strptr(elf, sh->sh_link, sym.st_name);
        if (!name)
            continue;
        if (!out->has_runtime_sym && strcmp(name, "_PyRuntime") == 0) {
            out->has_runtime_sym = true;
            out->runtime_sym = sym.st_value;
        } else if (!out->has_version_sym && strcmp(name, "Py_Version") == 0) {
            out->has_version_sym = true;
            out->version_sym = sym.st_value;
        } else if (!out->debug_build) {
            for (size_t k = 0; k < sizeof DEBUG_SYMBOLS / sizeof DEBUG_SYMBOLS[0]; k++)
                if (strcmp(name, DEBUG_SYMBOLS[k]) == 0)
                    out->debug_build = true;
        }
    }
}

static int inspect(Elf *elf, fpi_elf_info *out, fpi_errbuf *eb)
{
    memset(out, 0, sizeof *out);
    if (elf_kind(elf) != ELF_K_ELF)
        return fpi_err(eb, FP_E_FORMAT, "ELF header: not an ELF file");
    GElf_Ehdr eh;
    if (!gelf_getehdr(elf, &eh))
        return fpi_err(eb, FP_E_FORMAT, "bad ELF header: %s", elf_errmsg(-1));
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
        return fpi_err(eb, FP_E_UNSUPPORTED, "ELF header: not an x86-64 ELF64 file");

    size_t nph = 0;
    if (elf_getphdrnum(elf, &nph) == 0) {
        for (size_t i = 0; i < nph && i < FPI_ELF_MAX_SECTIONS; i++) {
            GElf_Phdr ph;
            if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
                continue;
            if (ph.p_offset == 0 || !out->has_load) {
                uint64_t align = ph.p_align > 1 && (ph.p_align & (ph.p_align - 1)) == 0 ? ph.p_align : 1;
                uint64_t base = (ph.p_vaddr - ph.p_offset) & ~(align - 1);
                if (!out->has_load || ph.p_offset == 0) {
                    out->has_load = true;
                    out->load_vaddr = base;
                }
                if (ph.p_offset == 0)
                    break;
            }
        }
    }

    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return fpi_err(eb, FP_E_FORMAT, "no section name table: %s", elf_errmsg(-1));
    Elf_Scn *scn = NULL;
    size_t nsec = 0;
    while ((scn = elf_nextscn(elf, scn)) != NULL) {
        if (++nsec > FPI_ELF_MAX_SECTIONS)
            return fpi_err(eb, FP_E_LIMIT, "ELF section table: more than %u sections", FPI_ELF_MAX_SECTIONS);
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
        if (name && strcmp(name, ".PyRuntime") == 0) {
            out->has_section = true;
            out->section_addr = sh.sh_addr;
            out->section_size = sh.sh_size;
        } else if (name && strcmp(name, ".AsyncioDebug") == 0) {
            out->has_asyncio_section = true;
            out->asyncio_section_addr = sh.sh_addr;
            out->asyncio_section_size = sh.sh_size;
        }
        if (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB)
            scan_symbols(elf, scn, &sh, out);
    }
    return FP_OK;
}

int fpi_elf_inspect_mem(const void *image, size_t len, fpi_elf_info *out, fpi_errbuf *eb)
{
    elf_version(EV_CURRENT);
    /* libelf wants a mutable pointer but does not write through it with ELF_C_READ_MMAP semantics of elf_memory. */
    Elf *elf = elf_memory((char *)(uintptr_t)image, len);
    if (!elf)
        return fpi_err(eb, FP_E_FORMAT, "cannot parse ELF image: %s", elf_errmsg(-1));
    int rc = inspect(elf, out, eb);
    elf_end(elf);
    return rc;
}

int fpi_elf_inspect_fd(int fd, fpi_elf_info *out, fpi_errbuf *eb)
{
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf)
        return fpi_err(eb, FP_E_FORMAT, "cannot parse ELF file: %s", elf_errmsg(-1));
    int rc = inspect(elf, out, eb);
    elf_end(elf);
    return rc;
}
