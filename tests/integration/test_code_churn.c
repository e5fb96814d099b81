/* test_code_churn.c — the code-object cache must never report a freed code
 * object's names or lines for a new code object at the same address.  For
 * every provisioned interpreter, one session (cache on) samples a target
 * that creates, parks in, and frees a fresh function per round; every
 * round's innermost frame must carry that round's name and line, and the
 * test reports how many rounds reused an earlier code object's address
 * (the case under test).  TAP: one test case per interpreter id of the
 * provisioning matrix (facts.env); the manifest is read at run time
 * ($FRAMEPROOF_HOME) and an id it lacks is skipped. */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fp_facts.h"
#include "frameproof/frameproof.h"

#define ROUNDS 60
#define PATH_LEN 4096
#define ID_LEN 64
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
            snprintf(why, whylen, "attach: %s", fp_session_get_errmsg(s));
            goto out;
        }
        for (int k = 0; k < r; k++)
            if (seen[k] == code) {
                (*reused)++;
                break;
            }
        seen[r] = code;
        if (fp_session_sample(s, sm)) {
            snprintf(why, whylen, "round %d: sample failed: %s", r, fp_session_get_errmsg(s));
            goto out;
        }
        const fp_frame *top = NULL;
        for (size_t i = 0; i < fp_sample_get_thread_count(sm); i++) {
            const fp_thread *th = fp_sample_get_thread(sm, i);
            if (th->native_id == tid && th->frame_count)
                top = fp_sample_get_frame(sm, th->first_frame);
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

/* $FRAMEPROOF_HOME/interpreters.json (default home from the facts); 0 or -1. */
static int manifest_path(char *out, size_t len)
{
    const char *home = getenv("FRAMEPROOF_HOME");
    if (!home || !*home)
        home = FP_FACT_FRAMEPROOF_HOME_DEFAULT;
    int n = snprintf(out, len, "%s/%s", home, FP_FACT_MANIFEST_NAME);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The manifest entry with this id, or NULL. */
static json_object *find_entry(json_object *list, const char *id)
{
    size_t n = list ? json_object_array_length(list) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        const char *eid = json_object_get_string(json_object_object_get(e, "id"));
        if (eid && strcmp(eid, id) == 0)
            return e;
    }
    return NULL;
}

/* Copies the next space-separated id of *p into id and advances; 0 at the end. */
static int next_id(const char **p, char *id, size_t len)
{
    *p += strspn(*p, " ");
    size_t n = strcspn(*p, " ");
    if (n == 0)
        return 0;
    snprintf(id, len, "%.*s", (int)n, *p);
    *p += n;
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_code_churn TARGET_SCRIPT\n");
        return 2;
    }
    char path[PATH_LEN];
    if (manifest_path(path, sizeof path)) {
        printf("1..1\nnot ok 1 - FRAMEPROOF_HOME is too long\n");
        return 1;
    }
    /* A missing manifest means nothing is provisioned: every id skips. */
    json_object *m = access(path, F_OK) == 0 ? json_object_from_file(path) : NULL;
    json_object *list = m ? json_object_object_get(m, "interpreters") : NULL;
    if (access(path, F_OK) == 0 && !json_object_is_type(list, json_type_array)) {
        printf("1..1\nnot ok 1 - read the interpreter manifest %s\n", path);
        json_object_put(m);
        return 1;
    }
    char id[ID_LEN];
    size_t count = 0;
    for (const char *p = FP_FACT_MATRIX_IDS; next_id(&p, id, sizeof id);)
        count++;
    printf("1..%zu\n", count);
    int failures = 0, total_reused = 0;
    size_t i = 0;
    for (const char *p = FP_FACT_MATRIX_IDS; next_id(&p, id, sizeof id);) {
        i++;
        json_object *e = find_entry(list, id);
        if (!e) {
            printf("ok %zu - code churn on %s # SKIP not provisioned (no entry in %s)\n", i, id, path);
            continue;
        }
        char why[1024] = "";
        int reused = 0;
        int rc = run_one(e, argv[1], why, sizeof why, &reused);
        total_reused += reused;
        if (rc) {
            failures++;
            printf("not ok %zu - code churn on %s\n# %s\n", i, id, why);
        } else {
            printf("ok %zu - code churn on %s (%d rounds, %d reused an earlier code object's address)\n", i, id,
                   ROUNDS, reused);
        }
        fflush(stdout);
    }
    printf("# %d rounds in all reused a freed code object's address\n", total_reused);
    json_object_put(m);
    return failures ? 1 : 0;
}
