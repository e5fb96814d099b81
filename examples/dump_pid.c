/* dump_pid — prints the Python stack of every thread of a running CPython
 * process, once: the smallest complete use of libframeproof.
 *
 *   cc dump_pid.c $(pkg-config --cflags --libs frameproof) -o dump_pid
 *   ./dump_pid PID
 *
 * Exit status: 0 on success, 1 when the process cannot be sampled, 2 on bad
 * usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <frameproof/frameproof.h>

/* A sample the target changed under is refused (FP_E_INCOMPLETE, FP_E_READ);
 * the next attempt may succeed. */
#define ATTEMPTS 100

static void print_thread(const fp_sample *sm, const fp_thread *t)
{
    printf("thread %llu%s%s\n", (unsigned long long)t->native_id, t->main ? " (main)" : "",
           t->holds_gil == FP_YES ? " (holds the GIL)" : "");
    if (t->error) {
        printf("    <not read: %s>\n", fp_error_describe(t->error));
        return;
    }
    for (size_t i = 0; i < t->frame_count; i++) {
        const fp_frame *f = fp_sample_get_frame(sm, t->first_frame + i);
        printf("    %s (%s:%d)\n", f->function, f->file, (int)f->line);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: dump_pid PID\n");
        return 2;
    }
    char *end;
    errno = 0;
    long pid = strtol(argv[1], &end, 10);
    if (errno || *end || pid <= 0 || pid > 0x7fffffffL) {
        fprintf(stderr, "dump_pid: %s: not a pid\n", argv[1]);
        return 2;
    }

    int status = 1, rc;
    fp_session *s = NULL;
    fp_sample *sm = NULL;
    fp_options opts;
    if ((rc = fp_options_init(&opts)) || (rc = fp_session_new(&opts, &s)) || (rc = fp_sample_new(&sm))) {
        fprintf(stderr, "dump_pid: %s\n", fp_error_describe(rc));
        goto out;
    }
    if ((rc = fp_session_attach_pid(s, (int)pid))) {
        fprintf(stderr, "dump_pid: %s\n", fp_session_get_errmsg(s));
        goto out;
    }
    fp_python_info py;
    if ((rc = fp_session_get_python(s, &py))) {
        fprintf(stderr, "dump_pid: %s\n", fp_session_get_errmsg(s));
        goto out;
    }
    for (int i = 0; i < ATTEMPTS; i++) {
        rc = fp_session_sample(s, sm);
        if (rc != FP_E_INCOMPLETE && rc != FP_E_READ)
            break;
    }
    if (!fp_sample_is_usable(sm, rc)) {
        fprintf(stderr, "dump_pid: %s\n", fp_session_get_errmsg(s));
        goto out;
    }
    printf("process %ld: CPython %s%s\n", pid, py.version, py.free_threaded ? " (free-threaded)" : "");
    for (size_t i = 0; i < fp_sample_get_thread_count(sm); i++)
        print_thread(sm, fp_sample_get_thread(sm, i));
    status = 0;
out:
    fp_sample_free(sm);
    fp_session_free(s);
    return status;
}
