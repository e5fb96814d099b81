/* async_offsets.h — asyncio's C module layout (_Py_AsyncioModuleDebugOffsets,
 * CPython 3.14+): found in the .AsyncioDebug section of whichever mapped
 * file holds the module (the _asyncio extension, libpython or the python
 * binary itself) and validated before use. */
#ifndef FPI_ASYNC_OFFSETS_H
#define FPI_ASYNC_OFFSETS_H

#include <stdbool.h>
#include <stdint.h>

#include "fp_error.h"
#include "layout.h"

/* Bytes of the table: 13 words. */
#define FPI_ASYNC_TABLE_SIZE 104u

typedef struct fpi_async_offsets {
    uint32_t task_size;                 /* TaskObj: the bytes read of each task or future */
    uint32_t task_name, task_awaited_by, task_is_task, task_awaited_by_is_set, task_coro, task_node;
    uint32_t task_state;                /* fut_state, the int just before task_is_task */
    uint32_t interp_tasks_head;         /* PyInterpreterState: the list of tasks of exited threads */
    uint32_t ts_size;                   /* _PyThreadStateImpl */
    uint32_t ts_running_loop, ts_running_task, ts_tasks_head;
} fpi_async_offsets;

/* Parses and validates the table read from the target against the layout
 * of its interpreter (sizes bounded, every field inside its structure, the
 * interpreter state the size the debug offsets give).  Returns FP_OK or
 * FP_E_CORRUPT. */
int fpi_async_offsets_parse(const uint8_t *table, size_t len, const fpi_layout *l, fpi_async_offsets *out,
                            fpi_errbuf *eb);

/* Finds the .AsyncioDebug section among the files process pid maps whose
 * name contains "python" (python3.X, libpython3.X.so, _asyncio.cpython-3X-….so).
 * *found is false when none has it (asyncio's C module not loaded yet).
 * Returns FP_OK, or FP_E_IO / FP_E_PROCESS_GONE / FP_E_FORMAT with a message. */
int fpi_async_offsets_locate(int pid, bool *found, uint64_t *addr, fpi_errbuf *eb);

#endif
