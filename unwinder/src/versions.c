/* versions.c — the refusal of a CPython version outside the supported range
 * (versions.h). */
#include "frameproof/frameproof.h"
#include "versions.h"

int fpi_msg_unsupported(char *buf, size_t len, unsigned major, unsigned minor)
{
    const char *hint = fpi_minor_untested(major, minor) ? "; newer versions only with allow_untested" : "";
    return fpi_msg(buf, len, FP_E_UNSUPPORTED, "CPython %u.%u: not supported (%u.%u–%u.%u are%s)", major, minor,
                   FPI_PY_MAJOR, FPI_MINOR_OLDEST, FPI_PY_MAJOR, FPI_MINOR_NEWEST, hint);
}

int fpi_err_unsupported(fpi_errbuf *eb, unsigned major, unsigned minor)
{
    return fpi_msg_unsupported(eb ? eb->msg : NULL, eb ? sizeof eb->msg : 0, major, minor);
}
