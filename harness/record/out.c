/* out.c — names of the record output formats and the dispatch to their
 * writers. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "out.h"

static const char *const FORMAT_NAMES[FPR_FORMAT_COUNT] = {"collapsed", "speedscope", "json", "gecko"};
static const char *const FORMAT_EXTENSIONS[FPR_FORMAT_COUNT] = {"txt", "speedscope.json", "jsonl", "gecko.json"};

int fpr_format_parse(const char *s)
{
    for (int i = 0; i < FPR_FORMAT_COUNT; i++)
        if (strcmp(s, FORMAT_NAMES[i]) == 0)
            return i;
    return -1;
}

const char *fpr_format_name(int format)
{
    return format >= 0 && format < FPR_FORMAT_COUNT ? FORMAT_NAMES[format] : "?";
}

void fpr_thread_label(const fpr_thread *t, char *buf, size_t size)
{
    snprintf(buf, size, "%s (%" PRIu64 ")", t->name[0] ? t->name : "thread", t->native_id);
}

const char *fpr_format_extension(int format)
{
    return format >= 0 && format < FPR_FORMAT_COUNT ? FORMAT_EXTENSIONS[format] : "out";
}

int fpr_write(FILE *out, int format, const fpr_profile *p, const fpr_run *run)
{
    int rc;
    switch (format) {
    case FPR_FORMAT_COLLAPSED: rc = fpr_write_collapsed(out, p); break;
    case FPR_FORMAT_SPEEDSCOPE: rc = fpr_write_speedscope(out, p, run); break;
    case FPR_FORMAT_JSON: rc = fpr_write_json(out, p, run); break;
    case FPR_FORMAT_GECKO: rc = fpr_write_gecko(out, p, run); break;
    default: errno = EINVAL; return -1;
    }
    if (rc == 0 && (fflush(out) != 0 || ferror(out)))
        rc = -1;
    return rc;
}
