/* async_output.h — the documented JSON and pstree-like text forms of
 * asyncio's task graph (`dump --async`). */
#ifndef CLI_ASYNC_OUTPUT_H
#define CLI_ASYNC_OUTPUT_H

#include <stdio.h>

#include "frameproof/async.h"
#include "frameproof/frameproof.h"

/* Every node in the graph's order, each with its stack (innermost first)
 * and the addresses of its awaiters, on one line.  sm: the threads' stacks
 * read with g (fp_async_graph_read_sample) or NULL; with them a running
 * task's stack is what it runs now, down to its coroutine
 * (fp_async_graph_get_running_frames).  edges: NULL, or (a self-test) an
 * earlier graph whose awaiters of a node at the same address are printed
 * instead. */
void cli_async_output_json(FILE *out, int pid, const fp_python_info *py, const fp_async_graph *g,
                           const fp_sample *sm, const fp_async_graph *edges);

/* One line for a read that failed (`dump --async --count`): the pid, the
 * message and the FP_E_* code. */
void cli_async_output_json_error(FILE *out, int pid, int code, const char *message);

/* A header line, then a tree per node nobody awaits, each node followed by
 * the nodes it awaits; stacks as in the JSON form.  Returns 0, or
 * FP_E_NOMEM with nothing printed. */
int cli_async_output_text(FILE *out, int pid, const fp_python_info *py, const fp_async_graph *g,
                          const fp_sample *sm);

#endif
