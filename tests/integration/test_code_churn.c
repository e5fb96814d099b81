/* test_code_churn.c — the code-object cache must never report a freed code
 * object's names or lines for a new code object at the same address.  For
 * every provisioned interpreter, one session (cache on) samples a target
 * that creates, parks in, and frees a fresh function per round; every
 * round's innermost frame must carry that round's name and line, and the
 * test reports how many rounds reused an earlier code object's address
 * (the case under test).  TAP: one test case per interpreter. */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frameproof/frameproof.h"

#define ROUNDS 60
#define LINE_MAX_LEN 512
#define MAX_ARGV 16

typedef struct target {
    pid_t pid;
    FILE *out; /* target's stdout */
    FILE *in;  /* target's stdin */
} target;

static int spawn(const char *root, json_object *argv, const char *script, target *t)
{
    int to_child[2], from_child[2];
    if (pipe(to_child) || pipe(from_child))
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        close(to_child[1]);
        close(from_child[0]);
        char *args[MAX_ARGV + 6];
        size_t n = 0;
        if (strcmp(root, "/") != 0) {
            args[n++] = "chroot";
            args[n++] = (char *)root;
        }
        size_t na = json_object_array_length(argv);
        for (size_t i = 0; i < na && i < MAX_ARGV; i++)
            args[n++] = (char *)json_object_get_string(json_object_array_get_idx(argv, i));
        args[n++] = (char *)script;
        char rounds[16];
        snprintf(rounds, sizeof rounds, "%d", ROUNDS);
        args[n++] = rounds;
        args[n] = NULL;
        execvp(args[0], args);
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    t->pid = pid;
    t->out = fdopen(from_child[0], "r");
    t->in = fdopen(to_child[1], "w");
    return t->out && t->in ? 0 : -1;
}

static void reap(target *t)
{
    if (t->in)
        fclose(t->in);
    if (t->out)
        fclose(t->out);
    kill(t->pid, SIGKILL);
    waitpid(t->pid, NULL, 0);
}

/* Copies the script where the interpreter can see it; returns its path as
 * seen inside the root. */
static int place_script(const char *src, const char *root, char *inside, size_t len)
{
    if (strcmp(root, "/") == 0) {
        snprintf(inside, len, "%s", src);
        return 0;
    }
    snprintf(inside, len, "/tmp/fp_churn_target.py");
    char dst[4096];
    snprintf(dst, sizeof dst, "%s%s", root, inside);
    FILE *a = fopen(src, "rb"), *b = fopen(dst, "wb");
    int rc = a && b ? 0 : -1;
    char buf[4096];
    size_t n;
    while (rc == 0 && (n = fread(buf, 1, sizeof buf, a)) > 0)
        if (fwrite(buf, 1, n, b) != n)
            rc = -1;
    if (a)
        fclose(a);
    if (b && fclose(b))
        rc = -1;
    return rc;
}

static int run_one(json_object *interp, const char *script, char *why, size_t whylen, int *reused)
{
    const char *root = json_object_get_string(json_object_object_get(interp, "root"));
    json_object *argv = json_object_object_get(interp, "argv");
    char inside[4096];
    if (place_script(script, root, inside, sizeof inside)) {
        snprintf(why, whylen, "cannot copy the target script into %s", root);
        return -1;
    }
    target t = {0};
    if (spawn(root, argv, inside, &t)) {
        snprintf(why, whylen, "cannot start the target");
        return -1;
    }
    fp_options o;
    fp_options_init(&o);
    fp_session *s = NULL;
    fp_sample *sm = NULL;
    int rc = -1;
    uint64_t seen[ROUNDS];
    *reused = 0;
    if (fp_session_new(&o, &s) || fp_sample_new(&sm)) {
        snprintf(why, whylen, "out of memory");
        goto out;
    }
    char line[LINE_MAX_LEN];
    for (int r = 0; r < ROUNDS; r++) {
        if (!fgets(line, sizeof line, t.out)) {
            snprintf(why, whylen, "target ended early at round %d", r);
            goto out;
        }
        int rnd, exp_line;
        uint64_t tid, code;
        char name[128];
        if (sscanf(line, "ready %d %" SCNu64 " %" SCNu64 " %127s %d", &rnd, &tid, &code, name, &exp_line) != 5) {
            snprintf(why, whylen, "bad line from target: %s", line);
            goto out;
        }
        if (r == 0 && fp_session_attach_pid(s, t.pid)) {
            snprintf(why, whylen, "attach: %s", fp_session_errmsg(s));
            goto out;
        }
        for (int k = 0; k < r; k++)
            if (seen[k] == code) {
                (*reused)++;
                break;
            }
        seen[r] = code;
        if (fp_session_sample(s, sm)) {
            snprintf(why, whylen, "round %d: sample failed: %s", r, fp_session_errmsg(s));
            goto out;
        }
        const fp_frame *top = NULL;
        for (size_t i = 0; i < fp_sample_thread_count(sm); i++) {
            const fp_thread *th = fp_sample_thread(sm, i);
            if (th->native_id == tid && th->frame_count)
                top = fp_sample_frame(sm, th->first_frame);
        }
        if (!top || strcmp(top->function, name) != 0 || top->line != exp_line || top->code_addr != code) {
            snprintf(why, whylen, "round %d: expected %s line %d at 0x%" PRIx64 ", got %s line %d at 0x%" PRIx64, r,
                     name, exp_line, code, top ? top->function : "(no thread)", top ? top->line : -1,
                     top ? top->code_addr : 0);
            goto out;
        }
        fputs("next\n", t.in);
        fflush(t.in);
    }
    rc = 0;
out:
    fp_sample_free(sm);
    fp_session_free(s);
    reap(&t);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_code_churn MANIFEST TARGET_SCRIPT\n");
        return 2;
    }
    json_object *m = json_object_from_file(argv[1]);
    json_object *list = m ? json_object_object_get(m, "interpreters") : NULL;
    if (!list) {
        printf("1..1\nnot ok 1 - read the interpreter manifest %s\n", argv[1]);
        return 1;
    }
    size_t n = json_object_array_length(list);
    printf("1..%zu\n", n);
    int failures = 0, total_reused = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        const char *id = json_object_get_string(json_object_object_get(e, "id"));
        char why[1024] = "";
        int reused = 0;
        int rc = run_one(e, argv[2], why, sizeof why, &reused);
        total_reused += reused;
        if (rc) {
            failures++;
            printf("not ok %zu - code churn on %s\n# %s\n", i + 1, id, why);
        } else {
            printf("ok %zu - code churn on %s (%d rounds, %d reused an earlier code object's address)\n", i + 1, id,
                   ROUNDS, reused);
        }
        fflush(stdout);
    }
    printf("# %d rounds in all reused a freed code object's address\n", total_reused);
    json_object_put(m);
    return failures ? 1 : 0;
}
