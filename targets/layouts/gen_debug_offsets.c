/* gen_debug_offsets.c — writes the _Py_DebugOffsets table a CPython 3.14+
 * build would carry, instantiated from that version's headers, padded to
 * 8 KiB.  Used for builds that cannot be run here (3.14t, 3.15t: compile
 * with -DPy_GIL_DISABLED=1).  The method reproduces the real 3.14.10 GIL
 * table byte for byte, and 3.15.2's except the two total sizes that
 * Debian's build options change.
 *   cc -DPy_BUILD_CORE=1 [-DPy_GIL_DISABLED=1] -I INC -I INC/internal \
 *      gen_debug_offsets.c -o gen && ./gen OUT.bin */
#define Py_BUILD_CORE 1
#include <stdio.h>
#include <string.h>
#include "Python.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_debug_offsets.h"

#define TABLE_FILE_BYTES 8192

int main(int argc, char **argv)
{
    static _Py_DebugOffsets table = _Py_DebugOffsets_INIT("xdebugpy");
    static unsigned char buf[TABLE_FILE_BYTES];
    if (argc != 2 || sizeof table > sizeof buf) {
        fprintf(stderr, "usage: gen OUT.bin\n");
        return 2;
    }
    memcpy(buf, &table, sizeof table);
    FILE *f = fopen(argv[1], "wb");
    if (!f || fwrite(buf, 1, sizeof buf, f) != sizeof buf || fclose(f)) {
        perror(argv[1]);
        return 1;
    }
    return 0;
}
