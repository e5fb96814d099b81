/* sampler_fixture.c — a running interpreter with a session attached, the
 * callbacks that record a run, CPU masks (sampler_fixture.h). */
#include "sampler_fixture.h"

const char *sampler_python;

/* Starts program and waits for its "ready" line. */
pid_t spawn_program(const char *program)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        execl(sampler_python, sampler_python, "-c", program, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    /* The line may arrive in more than one write. */
    struct pollfd p = {.fd = fd[0], .events = POLLIN};
    char line[16] = "";
    size_t len = 0;
    while (len < sizeof line - 1 && !strchr(line, '\n')) {
        assert_int_equal(poll(&p, 1, READY_TIMEOUT_MS), 1);
        ssize_t got = read(fd[0], line + len, sizeof line - 1 - len);
        assert_true(got > 0);
        len += (size_t)got;
    }
    close(fd[0]);
    assert_string_equal(line, "ready\n");
    return pid;
}

void reap(pid_t pid)
{
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

int setup_program(void **state, const char *program)
{
    target *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->pid = spawn_program(program);
    assert_int_equal(fp_session_new(NULL, &t->s), FP_OK);
    assert_int_equal(fp_sample_new(&t->sm), FP_OK);
    int rc = fp_session_attach_pid(t->s, (int)t->pid);
    if (rc)
        fail_msg("attach: %s", fp_session_get_errmsg(t->s));
    *state = t;
    return 0;
}

int setup(void **state)
{
    return setup_program(state, TARGET_PROGRAM);
}

int setup_churn(void **state)
{
    return setup_program(state, CHURN_PROGRAM);
}

int setup_codegen(void **state)
{
    return setup_program(state, CODEGEN_PROGRAM);
}

int setup_spin(void **state)
{
    return setup_program(state, SPIN_PROGRAM);
}

int setup_returning(void **state)
{
    return setup_program(state, RETURNING_PROGRAM);
}

int teardown(void **state)
{
    target *t = *state;
    fp_sample_free(t->sm);
    fp_session_free(t->s);
    if (t->pid > 0)
        reap(t->pid);
    free(t);
    return 0;
}

void get_sched(struct sched_attr *a)
{
    memset(a, 0, sizeof *a);
    assert_int_equal(syscall(SYS_sched_getattr, 0, a, (unsigned)sizeof *a, 0u), 0);
}

/* The calling thread's scheduling policy, or -1 (no cmocka assertion:
 * also called in forked children). */
int policy_now(void)
{
    struct sched_attr a;
    memset(&a, 0, sizeof a);
    return syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0u) == 0 ? (int)a.sched_policy : -1;
}

/* The scheduling policy a child forked now starts with. */
int child_policy(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(policy_now() & 0x7f);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -2;
    return WEXITSTATUS(status);
}

int on_sample(void *ctx, const fps_outcome *o)
{
    record *r = ctx;
    if (o->index != r->calls)
        r->in_order = false;
    if ((o->sample != NULL) != (o->rc == FP_OK || o->rc == FP_E_INCOMPLETE) || o->cls != fps_classify(o->rc) ||
        (o->rc == FP_OK && strcmp(o->errmsg, "") != 0))
        r->sample_ok = false;
    if (o->index < MAX_RECORDED)
        r->t_ns[o->index] = o->t_ns;
    if (r->calls++ == 0) {
        r->slack_ns = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
        get_sched(&r->sched);
        if (r->fork_child)
            r->child_policy = child_policy();
    }
    if (o->index == r->stall_at) {
        struct timespec ts = {.tv_sec = r->stall_ns / 1000000000, .tv_nsec = r->stall_ns % 1000000000};
        nanosleep(&ts, NULL);
    }
    return o->index == r->stop_at;
}

fps_config config(double rate_hz, double duration_s, uint64_t count)
{
    fps_config c;
    fps_config_init(&c);
    c.rate_hz = rate_hz;
    c.duration_s = duration_s;
    c.count = count;
    return c;
}

/* Runs c on t with the recording callback; fps_run must return `expect`. */
void run(target *t, const fps_config *c, record *r, fps_stats *st, int expect)
{
    assert_int_equal(fps_run(t->s, t->sm, c, on_sample, r, st), expect);
}

bool get_mask_of(pid_t task, cpu_mask *m)
{
    memset(m, 0, sizeof *m);
    return syscall(SYS_sched_getaffinity, task, sizeof m->w, m->w) > 0;
}

bool get_mask(cpu_mask *m)
{
    return get_mask_of(0, m);
}

int only_cpu(const cpu_mask *m)
{
    for (int cpu = 0; cpu < FPS_COLOCATE_MAX_CPUS; cpu++)
        if (m->w[cpu / 64] & (1UL << (cpu % 64)))
            return cpu;
    return -1;
}

int mask_count(const cpu_mask *m)
{
    int n = 0;
    for (size_t i = 0; i < MASK_WORDS; i++)
        n += __builtin_popcountl(m->w[i]);
    return n;
}

void on_own_retry(void *ctx, uint64_t native_id)
{
    own_hook *h = ctx;
    h->calls++;
    h->native_id = native_id;
}

/* The native id of the spin program's worker, seen holding the GIL in a
 * sample of t (t->sm then holds that sample). */
uint64_t spinning_holder(target *t)
{
    uint64_t holder = 0;
    int rc = FP_OK;
    /* The main thread holds the GIL too, briefly (until it blocks in join). */
    for (int k = 0; k < HOLDER_TRIES && (!holder || holder == (uint64_t)t->pid); k++) {
        if (k > 0) {
            struct timespec pause = {0, HOLDER_PAUSE_NS};
            nanosleep(&pause, NULL);
        }
        holder = 0;
        rc = fp_session_sample(t->s, t->sm);
        for (size_t i = 0; rc == FP_OK && i < fp_sample_get_thread_count(t->sm); i++)
            if (fp_sample_get_thread(t->sm, i)->holds_gil == FP_YES)
                holder = fp_sample_get_thread(t->sm, i)->native_id;
    }
    if (holder == 0 || holder == (uint64_t)t->pid)
        fail_msg("GIL holder %llu (main thread %d), last sample: %s %s", (unsigned long long)holder, (int)t->pid,
                 fp_error_describe(rc), fp_session_get_errmsg(t->s));
    return holder;
}
