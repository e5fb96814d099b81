/* record_output.c — where `frameproof record` writes its profile: a file
 * opened before the target runs (the default with -- COMMAND, so that the
 * profile is never mixed with the command's output) or standard output,
 * emptied only once the profile is written into it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record_cli.h"

/* Whether the profile goes to standard output: -o -, or --pid without -o.
 * A launched command without -o writes to frameproof-PID.EXT instead, so
 * that the profile is never mixed with the command's own output. */
static bool to_stdout(const cli_record_opts *o)
{
    return o->output ? strcmp(o->output, "-") == 0 : !o->command;
}

const char *cli_record_out_name(const cli_record_out *ro)
{
    return ro->path ? ro->path : "standard output";
}

/* pid: the launched command's, which names the default file.  0, or -1
 * with a message. */
int cli_record_open_output(const cli_record_opts *o, int pid, cli_record_out *ro)
{
    *ro = (cli_record_out){0};
    if (to_stdout(o)) {
        ro->f = stdout;
        return 0;
    }
    ro->path = o->output;
    if (!ro->path) {
        snprintf(ro->name, sizeof ro->name, "frameproof-%d.%s", pid, fpr_format_extension(o->format));
        ro->path = ro->name;
    }
    int fd = open(ro->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    ro->created = fd >= 0;
    if (fd < 0 && errno == EEXIST)
        fd = open(ro->path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || !(ro->f = fdopen(fd, "w"))) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (ro->created)
            unlink(ro->path);
        fprintf(stderr, "frameproof record: cannot write %s: %s\n", ro->path, strerror(e));
        return -1;
    }
    return 0;
}

/* Empties an existing regular file before the profile goes into it (a pipe
 * or a device has nothing to empty).  0, or -1 with a message. */
int cli_record_start_output(cli_record_out *ro)
{
    struct stat sb;
    if (!ro->started && ro->f != stdout && fstat(fileno(ro->f), &sb) == 0 && S_ISREG(sb.st_mode) &&
        ftruncate(fileno(ro->f), 0) != 0) {
        fprintf(stderr, "frameproof record: writing %s failed: %s\n", cli_record_out_name(ro), strerror(errno));
        return -1;
    }
    ro->started = true;
    return 0;
}

/* Closes the output; a file created for a profile never written is removed. */
void cli_record_close_output(cli_record_out *ro)
{
    if (ro->f && ro->f != stdout) {
        fclose(ro->f);
        if (ro->created && !ro->started)
            unlink(ro->path);
    }
    ro->f = NULL;
}

/* Ends the output: the streamed json's summary (already started), or the
 * whole profile in the other formats, and says where it went and how many
 * stacks it holds (top: NULL when they could not be counted).  0, or -1
 * with a message. */
int cli_record_write_profile(const cli_record_opts *o, const fpr_profile *p, const fpr_run *run, const fpr_top *top,
                         fpr_json_stream *stream, cli_record_out *ro)
{
    if (cli_record_start_output(ro))
        return -1;
    FILE *out = ro->f;
    ro->f = NULL;
    int rc = stream ? fpr_json_stream_close(stream, p, run) : fpr_write(out, o->format, p, run);
    int err = errno;
    if (out != stdout && fclose(out) != 0 && rc == 0) {
        rc = -1;
        err = errno;
    }
    if (rc) {
        fprintf(stderr, "frameproof record: writing %s failed: %s\n", cli_record_out_name(ro), strerror(err));
        return -1;
    }
    fprintf(stderr, "frameproof record: wrote %s profile to %s", fpr_format_name(o->format), cli_record_out_name(ro));
    if (top)
        fprintf(stderr, ": %" PRIu64 " distinct stacks in %zu threads, %" PRIu64 " thread samples", top->stacks,
                fpr_profile_thread_count(p), top->samples);
    fputc('\n', stderr);
    return 0;
}
