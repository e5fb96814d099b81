/* cmd_bench.c — `frameproof bench`: repeated samples of one process with
 * one session (the profiler's steady state), reporting per-sample latency. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "frameproof/frameproof.h"

#define BENCH_DEFAULT_SAMPLES 10000ul
#define BENCH_MAX_SAMPLES 100000000ul
#define NS_PER_US 1000.0

static const char BENCH_USAGE[] =
    "usage: frameproof bench --pid PID [--samples N] [--reader auto|vm|mem] [--no-cache] [--json]\n"
    "                       [--blocking] [--allow-untested-version]\n"
    "\n"
    "Samples every thread of process PID N times (default 10000) with one\n"
    "session, as a profiler would, and prints the sample rate and the latency\n"
    "distribution (mean, p50, p90, p99, max in microseconds), frames per\n"
    "sample and the number of samples that failed (with the first error).\n"
    "The target keeps running (with --blocking every thread is stopped with\n"
    "ptrace for each sample and resumed); failed samples are counted, not\n"
    "retried.\n"
    "--allow-untested-version samples a CPython newer than " FP_CLI_NEWEST " with " FP_CLI_NEWEST "'s\n"
    "knowledge (its own debug offsets, validated); the output says so.\n";

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int fp_cmd_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        {"pid", required_argument, NULL, 'p'},
        {"samples", required_argument, NULL, 's'},
        {"reader", required_argument, NULL, 'r'},
        {"no-cache", no_argument, NULL, 'n'},
        {"allow-untested-version", no_argument, NULL, 'U'},
        {"blocking", no_argument, NULL, 'B'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    fp_options o;
    fp_options_init(&o);
    o.thread_cpu_state = false; /* measure the unwinder, not /proc */
    unsigned long pid = 0, n = BENCH_DEFAULT_SAMPLES;
    int json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:s:r:njh", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (fp_parse_uint(optarg, INT_MAX, &pid) || !pid) {
                fprintf(stderr, "frameproof bench: invalid pid '%s'\n", optarg);
                return FP_EXIT_USAGE;
            }
            break;
        case 's':
            if (fp_parse_uint(optarg, BENCH_MAX_SAMPLES, &n) || !n) {
                fprintf(stderr, "frameproof bench: --samples must be 1..%lu\n", BENCH_MAX_SAMPLES);
                return FP_EXIT_USAGE;
            }
            break;
        case 'r':
            if (fp_parse_reader("bench", optarg, 1, &o.reader))
                return FP_EXIT_USAGE;
            break;
        case 'n': o.cache_code = false; break;
        case 'U': o.allow_untested = true; break;
        case 'B': o.blocking = true; break;
        case 'j': json = 1; break;
        case 'h': fputs(BENCH_USAGE, stdout); return FP_EXIT_OK;
        default: fputs(BENCH_USAGE, stderr); return FP_EXIT_USAGE;
        }
    }
    if (!pid || optind < argc) {
        fputs(BENCH_USAGE, stderr);
        return FP_EXIT_USAGE;
    }
    int status = FP_EXIT_ERROR;
    fp_session *s = NULL;
    fp_sample *sm = NULL;
    double *lat = malloc(n * sizeof *lat);
    char first_error[512] = "";
    if (!lat || fp_session_new(&o, &s) || fp_sample_new(&sm)) {
        fprintf(stderr, "frameproof bench: out of memory\n");
        goto out;
    }
    if (fp_session_attach_pid(s, (int)pid)) {
        fprintf(stderr, "frameproof bench: %s\n", fp_session_errmsg(s));
        goto out;
    }
    fp_python_info py;
    fp_session_python(s, &py);
    unsigned long failed = 0;
    unsigned long long frames = 0;
    double t0 = now_ns();
    for (unsigned long i = 0; i < n; i++) {
        double a = now_ns();
        int rc = fp_session_sample(s, sm);
        lat[i] = now_ns() - a;
        if (rc == FP_E_PROCESS_GONE) {
            fprintf(stderr, "frameproof bench: %s\n", fp_session_errmsg(s));
            goto out;
        }
        if (rc) {
            if (!failed)
                snprintf(first_error, sizeof first_error, "%s", fp_session_errmsg(s));
            failed++;
        }
        frames += fp_sample_frame_count(sm);
    }
    double total = now_ns() - t0;
    qsort(lat, n, sizeof *lat, cmp_double);
    double sum = 0;
    for (unsigned long i = 0; i < n; i++)
        sum += lat[i];
    double mean = sum / (double)n / NS_PER_US;
    double p50 = lat[n / 2] / NS_PER_US, p90 = lat[n * 9 / 10] / NS_PER_US;
    double p99 = lat[n * 99 / 100] / NS_PER_US, mx = lat[n - 1] / NS_PER_US;
    double rate = (double)n / (total / 1e9);
    if (json)
        printf("{\"samples\":%lu,\"failed\":%lu,\"reader\":\"%s\",\"cache\":%s,\"samples_per_s\":%.1f,"
               "\"mean_us\":%.2f,\"p50_us\":%.2f,\"p90_us\":%.2f,\"p99_us\":%.2f,\"max_us\":%.2f,"
               "\"frames_per_sample\":%.1f%s}\n",
               n, failed, fp_session_reader_name(s), o.cache_code ? "true" : "false", rate, mean, p50, p90,
               p99, mx, (double)frames / (double)n, py.untested ? ",\"untested\":true" : "");
    else
        printf("samples %lu (failed %lu)  reader %s  cache %s\n"
               "rate %.0f samples/s  latency us: mean %.2f  p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n"
               "frames per sample %.1f\n",
               n, failed, fp_session_reader_name(s), o.cache_code ? "on" : "off", rate, mean, p50, p90, p99, mx,
               (double)frames / (double)n);
    if (failed)
        printf("first failure: %s\n", first_error);
    if (py.untested && !json)
        printf("untested version: CPython %s (newer than the newest supported)\n", py.version);
    status = FP_EXIT_OK;
out:
    free(lat);
    fp_sample_free(sm);
    fp_session_free(s);
    return status;
}
