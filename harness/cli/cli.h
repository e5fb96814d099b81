/* cli.h — subcommands of the frameproof command-line tool. */
#ifndef FP_CLI_H
#define FP_CLI_H

#include "frameproof/frameproof.h"

/* The supported CPython range, spelled from the library's public one. */
#define FP_CLI_STR(x) #x
#define FP_CLI_XSTR(x) FP_CLI_STR(x)
#define FP_CLI_NEWEST FP_CLI_XSTR(FP_PYTHON_MAJOR) "." FP_CLI_XSTR(FP_PYTHON_NEWEST_MINOR)

/* The help of --allow-untested-version (dump, replay). */
/* --blocking, shared by dump and bench. */
#define FP_CLI_BLOCKING_HELP                                                           \
    "  --blocking       stop every thread (ptrace) for each sample and resume it:\n" \
    "                   consistent by construction; the target is paused briefly\n"

#define FP_CLI_PAUSE_TORN_HELP                                                         \
    "  --pause-torn     a thread whose walk the running target tore twice is\n"   \
    "                   stopped alone (ptrace), walked again with every check\n"  \
    "                   and resumed: few samples lost as torn, that thread\n"      \
    "                   paused briefly now and then (not with --blocking)\n"

#define FP_CLI_UNTESTED_HELP                                                            \
    "  --allow-untested-version\n"                                                      \
    "                   unwind a CPython newer than " FP_CLI_NEWEST " with " FP_CLI_NEWEST \
    "'s knowledge\n"                                                                    \
    "                   (its own debug offsets, validated; the output says so)\n"

/* Exit statuses. */
#define FP_EXIT_OK 0
#define FP_EXIT_ERROR 1
#define FP_EXIT_USAGE 2

int fp_cmd_dump(int argc, char **argv);
int fp_cmd_bench(int argc, char **argv);
int fp_cmd_record(int argc, char **argv);

/* Parses a --reader value (auto, vm, mem; auto only when allow_auto) into
 * an enum fp_reader_kind; prints a message for `cmd` and returns -1 if it
 * is not one of them. */
int fp_parse_reader(const char *cmd, const char *value, int allow_auto, int *out);

/* Parses a non-negative integer option value; returns 0 on success. */
int fp_parse_uint(const char *s, unsigned long max, unsigned long *out);

/* Parses a finite number in (0, max]; returns 0 on success. */
int fp_parse_positive(const char *s, double max, double *out);

#endif
