/* async_offsets.c — finding and validating asyncio's C module layout
 * (async_offsets.h).  The section is looked for the way CPython's own
 * remote debugger does it: every mapping at file offset 0 whose file name
 * contains "python", its load bias from the file's first PT_LOAD. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frameproof/frameproof.h"
#include "async_offsets.h"
#include "typed_load.h"
#include "locate_elf.h"
#include "maps.h"

static uint64_t word(const uint8_t *t, unsigned i)
{
    return fpi_load_u64(t, (int32_t)(8u * i));
}

/* off + width must lie inside a structure of size bytes. */
static bool inside(uint64_t off, uint64_t width, uint64_t size)
{
    return off <= size && size - off >= width;
}

int fpi_async_offsets_parse(const uint8_t *t, size_t len, const fpi_layout *l, fpi_async_offsets *out,
                            fpi_errbuf *eb)
{
    memset(out, 0, sizeof *out);
    if (len < FPI_ASYNC_TABLE_SIZE)
        return fpi_err(eb, FP_E_CORRUPT, "asyncio debug offsets: %zu bytes, not %u", len, FPI_ASYNC_TABLE_SIZE);
    uint64_t tsize = word(t, 0), name = word(t, 1), by = word(t, 2), is_task = word(t, 3), by_set = word(t, 4);
    uint64_t coro = word(t, 5), node = word(t, 6), isize = word(t, 7), ihead = word(t, 8), ssize = word(t, 9);
    uint64_t loop = word(t, 10), running = word(t, 11), shead = word(t, 12);
    if (tsize == 0 || tsize > FPI_MAX_SMALL_STRUCT)
        return fpi_err(eb, FP_E_CORRUPT, "asyncio debug offsets: task size %llu is out of bounds (1..%u)",
                       (unsigned long long)tsize, FPI_MAX_SMALL_STRUCT);
    /* The future's state is the int right before is_task (FutureObj_HEAD:
     * fut_state _state; char _is_task; char _awaited_by_is_set). */
    if (!inside(name, 8, tsize) || !inside(by, 8, tsize) || !inside(coro, 8, tsize) || !inside(node, 16, tsize) ||
        !inside(is_task, 1, tsize) || !inside(by_set, 1, tsize) || is_task < 4 || by_set != is_task + 1)
        return fpi_err(eb, FP_E_CORRUPT, "asyncio debug offsets: a task field lies outside the task (%llu bytes)",
                       (unsigned long long)tsize);
    if (isize != (uint64_t)l->interp_size || !inside(ihead, 16, isize))
        return fpi_err(eb, FP_E_CORRUPT,
                       "asyncio debug offsets: interpreter state of %llu bytes (the runtime's: %d), list at %llu",
                       (unsigned long long)isize, l->interp_size, (unsigned long long)ihead);
    if (ssize < (uint64_t)l->ts_size || ssize > FPI_MAX_TSTATE_SIZE || !inside(loop, 8, ssize) ||
        !inside(running, 8, ssize) || !inside(shead, 16, ssize))
        return fpi_err(eb, FP_E_CORRUPT, "asyncio debug offsets: a thread-state field lies outside its %llu bytes",
                       (unsigned long long)ssize);
    out->task_size = (uint32_t)tsize;
    out->task_name = (uint32_t)name;
    out->task_awaited_by = (uint32_t)by;
    out->task_is_task = (uint32_t)is_task;
    out->task_awaited_by_is_set = (uint32_t)by_set;
    out->task_state = (uint32_t)is_task - 4;
    out->task_coro = (uint32_t)coro;
    out->task_node = (uint32_t)node;
    out->interp_tasks_head = (uint32_t)ihead;
    out->ts_size = (uint32_t)ssize;
    out->ts_running_loop = (uint32_t)loop;
    out->ts_running_task = (uint32_t)running;
    out->ts_tasks_head = (uint32_t)shead;
    return FP_OK;
}

static bool python_file(const char *path)
{
    const char *b = strrchr(path, '/');
    return strstr(b ? b + 1 : path, "python") != NULL;
}

int fpi_async_offsets_locate(int pid, bool *found, uint64_t *addr, fpi_errbuf *eb)
{
    *found = false;
    *addr = 0;
    fpi_maps maps = {0};
    int rc = fpi_maps_read_pid(pid, &maps, eb);
    if (rc)
        return rc;
    for (size_t i = 0; i < maps.n && !*found; i++) {
        const fpi_mapping *m = &maps.v[i];
        if (!m->path || m->offset != 0 || !python_file(m->path))
            continue;
        char used[FPI_MAPS_MAX_PATH + 64];
        int fd = fpi_maps_open_file(pid, m, used, sizeof used);
        if (fd < 0)
            continue; /* a file that cannot be opened cannot be searched: the next may hold the section */
        fpi_elf_info ei;
        fpi_errbuf why = {{0}};
        int erc = fpi_elf_inspect_fd(fd, &ei, &why);
        close(fd);
        if (erc || !ei.has_asyncio_section || !ei.has_load)
            continue;
        if (ei.asyncio_section_size < FPI_ASYNC_TABLE_SIZE) {
            rc = fpi_err(eb, FP_E_FORMAT, "%s: .AsyncioDebug holds %llu bytes, not %u", m->path,
                         (unsigned long long)ei.asyncio_section_size, FPI_ASYNC_TABLE_SIZE);
            break;
        }
        *addr = m->start - ei.load_vaddr + ei.asyncio_section_addr;
        *found = true;
    }
    fpi_maps_free(&maps);
    return rc;
}
