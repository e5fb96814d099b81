/* call_site_kind.h — what a frame suspended under a directly linked
 * generator's or coroutine's frame is suspended in (call_sites.c). */
#ifndef FPI_CALL_SITE_KIND_H
#define FPI_CALL_SITE_KIND_H

typedef enum fpi_resumer {
    FPI_RESUMER_UNKNOWN,   /* cannot be told: no table or no bytecode kept; 3.11, 3.12 without an instruction
                              map; an instrumented line or instruction, which hides its opcode */
    FPI_RESUMER_RESUMES,   /* SEND or FOR_ITER (3.12+): resumes a generator inline */
    FPI_RESUMER_DELEGATES, /* a generator's YIELD_VALUE or RESUME (3.12+): waits under the generator it
                              delegates to while gen.throw() passes an exception down */
    FPI_RESUMER_OTHER,     /* any other instruction */
} fpi_resumer;

#endif
