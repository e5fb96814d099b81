/* cmd_bench.c — `frameproof bench`: repeated samples of one process with
 * one session (the profiler's steady state), paced and bounded by the
 * sampling API (harness/sampler), reporting per-sample latency and the
 * outcomes. */
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_floor.h"
#include "cli.h"
#include "frameproof/frameproof.h"
#include "json_writer.h"
#include "sampler.h"
#include "sampling_policy.h"

#define BENCH_DEFAULT_SAMPLES 10000ul
#define BENCH_MAX_SAMPLES 100000000ul
#define BENCH_MAX_RATE_HZ 100000      /* 10 µs per tick, below a sample's cost */
#define BENCH_MAX_DURATION_S 86400     /* one day */
#define BENCH_FIRST_LATENCIES 65536ul  /* latency slots allocated before the run; doubled as needed */
#define BENCH_ERRMSG_MAX 512
#define BENCH_STATUS_LINE 256 /* a /proc/self/status line */
#define NS_PER_US 1000.0

#define BENCH_STR(x) #x
#define BENCH_XSTR(x) BENCH_STR(x)

static const char BENCH_USAGE[] =
    "usage: frameproof bench --pid PID [--samples N] [--rate HZ] [--duration S] [--reader auto|vm|mem]\n"
    "                       [--no-cache] [--json] [--blocking | --no-colocate | --no-hold | --no-pause-torn]\n"
    "                       [--inject-fault drop-torn|retry-quiet] [--[no-]realtime] [--floor]\n"
    "                       [--allow-untested-version]\n"
    "\n"
    "Samples every thread of process PID N times (default 10000) with one\n"
    "session, as a profiler would, and prints the sample rate and the latency\n"
    "distribution (mean, p50, p90, p99, max in microseconds), frames per\n"
    "sample, the remote reads per sample (reader calls: a batched read counts\n"
    "once) and the bytes they asked for (median and mean), and the number of\n"
    "samples that failed (with the first error: \"first_failure\" in --json,\n"
    "which prints one JSON document), the thread walks the target changed\n"
    "under and that were walked again (\"torn_walks\"; with --pause-torn, those\n"
    "walked again with their thread stopped: \"paused_walks\"), and bench's own peak\n"
    "resident set size (VmHWM of /proc/self/status, KiB; \"peak_rss_kib\").\n"
    "  --rate HZ        sample on a fixed schedule of HZ per second (at most\n"
    "                   " BENCH_XSTR(BENCH_MAX_RATE_HZ) ") instead of back to back; ticks a sample\n"
    "                   overran are skipped and counted as missed, never caught\n"
    "                   up; the output adds the achieved rate and missed ticks\n"
    "  --duration S     stop after S seconds (at most " BENCH_XSTR(BENCH_MAX_DURATION_S) "); N then bounds\n"
    "                   the run only when --samples is given\n";

/* The help after the policy's (one string would pass the 4095 characters
 * C11 compilers must take). */
static const char BENCH_USAGE_END[] =
    "                   (\"colocate_moves\": the moves made, \"colocate_retry_follows\":\n"
    "                   torn walks moved for, \"colocate_escapes\": threads left to\n"
    "                   end an update, \"colocate_holds\": samples with the thread\n"
    "                   held, \"paused_walks\": threads stopped)\n"
    "  --floor          after the run, time single process_vm_readv calls of the\n"
    "                   median bytes per sample from one readable mapping of the\n"
    "                   target large enough (/proc/PID/maps) and print their\n"
    "                   median (\"floor_us\" in --json): the floor under a sample\n"
    "                   reading that much; when no mapping is large enough it\n"
    "                   says so (\"floor_us\":null and \"floor_note\")\n"
    "A failure is transient (torn, unreadable, corrupt or too deep: the target\n"
    "moved during the walk) or fatal (process gone, permission denied, ...).\n"
    "Transient failures are counted, not retried; the first fatal one ends\n"
    "bench with its message (exit status 1).\n"
    "The target keeps running (with --blocking every thread is stopped with\n"
    "ptrace for each sample and resumed; by default a thread whose walk the\n"
    "target tore twice is stopped alone, walked again and resumed).\n"
    "--allow-untested-version samples a CPython newer than " CLI_NEWEST " with " CLI_NEWEST "'s\n"
    "knowledge (its own debug offsets, validated); the output says so.\n";

static void print_usage(FILE *f)
{
    fputs(BENCH_USAGE, f);
    fputs(CLI_POLICY_HELP, f);
    fputs(BENCH_USAGE_END, f);
}

/* What the callback keeps of each attempt. */
typedef struct bench_run {
    double *lat;            /* ns inside fp_session_sample, one per attempt */
    double *reads, *bytes;  /* remote reads and bytes read, one per attempt */
    fp_read_stats seen;     /* the session's counts after the run */
    uint64_t cap, max;      /* slots allocated; the most the run can need */
    unsigned long long frames;
    bool have_failure, oom;
    char first_failure[BENCH_ERRMSG_MAX];
} bench_run;

/* What bench measures of itself and, with --floor, of a bare read. */
typedef struct bench_extra {
    long peak_rss_kib;       /* peak_rss_kib() after the run */
    bool floor;              /* --floor given */
    enum cli_floor_result floor_rc;
    double floor_us;         /* with CLI_FLOOR_OK: median of the timed reads */
    char floor_why[BENCH_ERRMSG_MAX];
} bench_extra;

static int on_sample(void *ctx, const fps_outcome *o)
{
    bench_run *r = ctx;
    if (o->index >= r->cap) {
        uint64_t cap = r->cap * 2 < r->max ? r->cap * 2 : r->max;
        double *lat = realloc(r->lat, cap * sizeof *lat);
        if (lat)
            r->lat = lat;
        double *reads = lat ? realloc(r->reads, cap * sizeof *reads) : NULL;
        if (reads)
            r->reads = reads;
        double *bytes = reads ? realloc(r->bytes, cap * sizeof *bytes) : NULL;
        if (!bytes) {
            r->oom = true;
            return 1;
        }
        r->bytes = bytes;
        r->cap = cap;
    }
    r->lat[o->index] = (double)o->cost_ns;
    r->reads[o->index] = (double)o->reads;
    r->bytes[o->index] = (double)o->bytes;
    if (o->sample)
        r->frames += fp_sample_get_frame_count(o->sample);
    if (o->cls == FPS_TRANSIENT && !r->have_failure) {
        snprintf(r->first_failure, sizeof r->first_failure, "%s", o->errmsg);
        r->have_failure = true;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v[0..n) and returns its mean; *median gets the middle value. */
static double sort_mean(double *v, uint64_t n, double *median)
{
    qsort(v, n, sizeof *v, cmp_double);
    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += v[i];
    *median = v[n / 2];
    return sum / (double)n;
}

/* ,"key":"text" with the text escaped, inside bench's one-line JSON. */
static void json_text(const char *key, const char *text)
{
    jw_writer j;
    jw_init(&j, stdout);
    printf(",\"%s\":", key);
    jw_string(&j, text);
}

static void print_report(const bench_run *r, const bench_extra *x, const fps_stats *st, const fps_config *c,
                         fp_session *s, const fp_options *o, const fp_python_info *py, bool json)
{
    const uint64_t n = st->attempts;
    double lat_p50, reads_p50, bytes_p50;
    double mean = sort_mean(r->lat, n, &lat_p50) / NS_PER_US;
    double reads_mean = sort_mean(r->reads, n, &reads_p50), bytes_mean = sort_mean(r->bytes, n, &bytes_p50);
    double p50 = lat_p50 / NS_PER_US, p90 = r->lat[n * 9 / 10] / NS_PER_US;
    double p99 = r->lat[n * 99 / 100] / NS_PER_US, mx = r->lat[n - 1] / NS_PER_US;
    double fps = (double)r->frames / (double)n;
    unsigned long long failed = st->transient + st->fatal;
    if (json) {
        printf("{\"samples\":%llu,\"failed\":%llu,\"transient\":%llu,\"fatal\":%llu,\"reader\":\"%s\",\"cache\":%s,"
               "\"samples_per_s\":%.1f,\"mean_us\":%.2f,\"p50_us\":%.2f,\"p90_us\":%.2f,\"p99_us\":%.2f,"
               "\"max_us\":%.2f,\"frames_per_sample\":%.1f,\"reads_p50\":%.0f,\"reads_mean\":%.2f,"
               "\"bytes_p50\":%.0f,\"bytes_mean\":%.1f",
               (unsigned long long)n, failed, (unsigned long long)st->transient, (unsigned long long)st->fatal,
               fp_session_get_reader_name(s), o->cache_code ? "true" : "false", st->achieved_rate_hz, mean, p50, p90,
               p99, mx, fps, reads_p50, reads_mean, bytes_p50, bytes_mean);
        if (c->rate_hz > 0)
            printf(",\"rate_hz\":%.1f,\"achieved_rate_hz\":%.1f,\"missed_ticks\":%llu,\"held_s\":%.6f", c->rate_hz,
                   st->achieved_rate_hz, (unsigned long long)st->missed_ticks, st->held_s);
        printf(",\"torn_walks\":%llu,\"paused_walks\":%llu,\"peak_rss_kib\":%ld", (unsigned long long)r->seen.torn,
               (unsigned long long)r->seen.paused, x->peak_rss_kib);
        if (c->colocate_pid > 0)
            printf(",\"colocate_moves\":%llu,\"colocate_unknown\":%llu,\"colocate_retry_follows\":%llu,"
                   "\"colocate_escapes\":%llu,\"colocate_holds\":%llu,\"colocate_hold_refused\":%llu",
                   (unsigned long long)st->colocate_moves, (unsigned long long)st->colocate_unknown,
                   (unsigned long long)st->colocate_retry_follows, (unsigned long long)st->colocate_escapes,
                   (unsigned long long)st->colocate_holds, (unsigned long long)st->colocate_hold_refused);
        if (x->floor && x->floor_rc == CLI_FLOOR_OK)
            printf(",\"floor_us\":%.2f", x->floor_us);
        else if (x->floor) {
            printf(",\"floor_us\":null");
            json_text("floor_note", x->floor_why);
        }
        if (r->have_failure)
            json_text("first_failure", r->first_failure);
        printf("%s}\n", py->untested ? ",\"untested\":true" : "");
    } else {
        printf("samples %llu (failed %llu: transient %llu, fatal %llu)  reader %s  cache %s\n"
               "rate %.0f samples/s  latency us: mean %.2f  p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n"
               "frames per sample %.1f\n"
               "remote reads per sample: median %.0f, mean %.2f; bytes read per sample: median %.0f, mean %.1f\n",
               (unsigned long long)n, failed, (unsigned long long)st->transient, (unsigned long long)st->fatal,
               fp_session_get_reader_name(s), o->cache_code ? "on" : "off", st->achieved_rate_hz, mean, p50, p90, p99,
               mx, fps, reads_p50, reads_mean, bytes_p50, bytes_mean);
        if (c->rate_hz > 0)
            printf("schedule %.0f Hz: achieved %.1f Hz, missed ticks %llu\n", c->rate_hz, st->achieved_rate_hz,
                   (unsigned long long)st->missed_ticks);
        if (c->rate_hz > 0 && c->target_time)
            printf("ticks spaced in the target's own time: samples held it still %.3f s\n", st->held_s);
        printf("thread walks torn (the target changed under them; walked again): %llu\n",
               (unsigned long long)r->seen.torn);
        if (o->pause_torn)
            printf("thread walks done again with their thread stopped (--pause-torn): %llu\n",
                   (unsigned long long)r->seen.paused);
        if (c->colocate_pid > 0)
            printf("colocated: %llu moves to another CPU, %llu samples where the thread's CPU was unknown, "
                   "%llu torn walks retried from their thread's CPU, %llu held there (%llu holds refused)\n",
                   (unsigned long long)st->colocate_moves, (unsigned long long)st->colocate_unknown,
                   (unsigned long long)st->colocate_retry_follows, (unsigned long long)st->colocate_holds,
                   (unsigned long long)st->colocate_hold_refused);
        printf("peak RSS %ld KiB\n", x->peak_rss_kib);
        if (x->floor && x->floor_rc == CLI_FLOOR_OK)
            printf("floor: one process_vm_readv of %.0f bytes: p50 %.2f us\n", bytes_p50, x->floor_us);
        else if (x->floor)
            printf("floor: not measured: %s\n", x->floor_why);
    }
    if (r->have_failure && !json)
        printf("first failure: %s\n", r->first_failure);
    if (py->untested && !json)
        printf("untested version: CPython %s (newer than the newest supported)\n", py->version);
}

/* This process's peak resident set size in KiB: VmHWM of /proc/self/status.
 * getrusage's ru_maxrss only when that is unreadable: it also counts the
 * image of the process that forked bench (exec carries its high-water mark
 * over), so a bench started by a large process would report that one's. */
static long peak_rss_kib(void)
{
    char line[BENCH_STATUS_LINE];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && kib < 0 && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) != 1)
            kib = -1;
    if (f)
        fclose(f);
    struct rusage ru;
    if (kib < 0 && getrusage(RUSAGE_SELF, &ru) == 0)
        kib = ru.ru_maxrss;
    return kib;
}

/* --floor: a bare read of the median bytes per sample (sorted in place). */
static void measure_floor(bench_run *r, const fps_stats *st, int pid, bench_extra *x)
{
    double bytes_p50;
    sort_mean(r->bytes, st->attempts, &bytes_p50);
    x->floor_rc = cli_bench_floor(pid, (size_t)bytes_p50, &x->floor_us, x->floor_why, sizeof x->floor_why);
}

/* A positive option value up to max; prints the usage error and returns -1 otherwise. */
static int parse_amount(const char *arg, const char *option, const char *unit, int max, double *out)
{
    if (!cli_parse_positive(arg, max, out))
        return 0;
    fprintf(stderr, "frameproof bench: %s must be a number of %s above 0, at most %d\n", option, unit, max);
    return -1;
}

int cli_cmd_bench(int argc, char **argv)
{
    enum { O_RATE = 1, O_DURATION };
    static const struct option opts[] = {
        {"pid", required_argument, NULL, 'p'},
        {"samples", required_argument, NULL, 's'},
        {"rate", required_argument, NULL, O_RATE},
        {"duration", required_argument, NULL, O_DURATION},
        {"reader", required_argument, NULL, 'r'},
        {"no-cache", no_argument, NULL, 'n'},
        {"allow-untested-version", no_argument, NULL, 'U'},
        {"blocking", no_argument, NULL, 'B'},
        {"pause-torn", no_argument, NULL, 'T'},
        {"no-pause-torn", no_argument, NULL, 't'},
        {"no-colocate", no_argument, NULL, 'c'},
        {"hold", no_argument, NULL, 'H'},
        {"realtime", no_argument, NULL, 'X'},
        {"no-realtime", no_argument, NULL, 'x'},
        {"no-hold", no_argument, NULL, 'k'},
        {"inject-fault", required_argument, NULL, 'I'},
        {"json", no_argument, NULL, 'j'},
        {"floor", no_argument, NULL, 'F'},
        {"colocate", no_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    fp_options o;
    fp_options_init(&o);
    o.thread_cpu_state = false; /* measure the unwinder, not /proc */
    fps_config cfg;
    fps_config_init(&cfg);
    cli_policy policy;
    cli_policy_init(&policy);
    unsigned long pid = 0, n = 0;
    int json = 0, c;
    bench_extra extra = {0};
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:s:r:njh", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (cli_parse_uint(optarg, INT_MAX, &pid) || !pid) {
                fprintf(stderr, "frameproof bench: invalid pid '%s'\n", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 's':
            if (cli_parse_uint(optarg, BENCH_MAX_SAMPLES, &n) || !n) {
                fprintf(stderr, "frameproof bench: --samples must be 1..%lu\n", BENCH_MAX_SAMPLES);
                return CLI_EXIT_USAGE;
            }
            break;
        case O_RATE:
            if (parse_amount(optarg, "--rate", "Hz", BENCH_MAX_RATE_HZ, &cfg.rate_hz))
                return CLI_EXIT_USAGE;
            break;
        case O_DURATION:
            if (parse_amount(optarg, "--duration", "seconds", BENCH_MAX_DURATION_S, &cfg.duration_s))
                return CLI_EXIT_USAGE;
            break;
        case 'r':
            if (cli_parse_reader("bench", optarg, 1, &o.reader))
                return CLI_EXIT_USAGE;
            break;
        case 'n': o.cache_code = false; break;
        case 'U': o.allow_untested = true; break;
        case 'B': policy.blocking = true; break;
        case 'T': policy.pause_torn = CLI_POLICY_ON; break;
        case 't': policy.pause_torn = CLI_POLICY_OFF; break;
        case 'c': policy.colocate = CLI_POLICY_OFF; break;
        case 'H': policy.hold = CLI_POLICY_ON; break;
        case 'X': policy.realtime = CLI_POLICY_ON; break;
        case 'x': policy.realtime = CLI_POLICY_OFF; break;
        case 'k': policy.hold = CLI_POLICY_OFF; break;
        case 'I':
            if (cli_policy_fault("bench", optarg, &policy))
                return CLI_EXIT_USAGE;
            break;
        case 'j': json = 1; break;
        case 'F': extra.floor = true; break;
        case 'C': policy.colocate = CLI_POLICY_ON; break;
        case 'h': print_usage(stdout); return CLI_EXIT_OK;
        default: print_usage(stderr); return CLI_EXIT_USAGE;
        }
    }
    if (!pid || optind < argc) {
        print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (cli_policy_apply("bench", &policy, &o, &cfg))
        return CLI_EXIT_USAGE;
    if (cfg.colocate_pid)
        cfg.colocate_pid = (int)pid;
    /* --duration alone is bounded by the most samples bench can keep. */
    cfg.count = n ? n : cfg.duration_s > 0 ? BENCH_MAX_SAMPLES : BENCH_DEFAULT_SAMPLES;
    int status = CLI_EXIT_ERROR;
    fp_session *s = NULL;
    fp_sample *sm = NULL;
    bench_run run = {.max = cfg.count};
    run.cap = run.max < BENCH_FIRST_LATENCIES ? run.max : BENCH_FIRST_LATENCIES;
    run.lat = malloc(run.cap * sizeof *run.lat);
    run.reads = malloc(run.cap * sizeof *run.reads);
    run.bytes = malloc(run.cap * sizeof *run.bytes);
    if (!run.lat || !run.reads || !run.bytes || fp_session_new(&o, &s) || fp_sample_new(&sm)) {
        fprintf(stderr, "frameproof bench: out of memory\n");
        goto out;
    }
    if (fp_session_attach_pid(s, (int)pid)) {
        fprintf(stderr, "frameproof bench: %s\n", fp_session_get_errmsg(s));
        goto out;
    }
    fp_python_info py;
    fp_session_get_python(s, &py);
    fps_stats st;
    const int run_rc = fps_run(s, sm, &cfg, on_sample, &run, &st);
    fp_session_get_read_stats(s, &run.seen);
    if (run_rc) {
        /* A fatal sample leaves its message in the session. */
        fprintf(stderr, "frameproof bench: %s\n", st.fatal ? fp_session_get_errmsg(s) : st.first_fatal);
        goto out;
    }
    if (run.oom) {
        fprintf(stderr, "frameproof bench: out of memory\n");
        goto out;
    }
    extra.peak_rss_kib = peak_rss_kib();
    if (extra.floor)
        measure_floor(&run, &st, (int)pid, &extra);
    print_report(&run, &extra, &st, &cfg, s, &o, &py, json);
    status = CLI_EXIT_OK;
out:
    free(run.lat);
    free(run.reads);
    free(run.bytes);
    fp_sample_free(sm);
    fp_session_free(s);
    return status;
}
