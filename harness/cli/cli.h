/* cli.h — subcommands of the frameproof command-line tool. */
#ifndef CLI_H
#define CLI_H

#include "frameproof/frameproof.h"

/* The supported CPython range, spelled from the library's public one. */
#define CLI_STR(x) #x
#define CLI_XSTR(x) CLI_STR(x)
#define CLI_NEWEST CLI_XSTR(FP_PYTHON_MAJOR) "." CLI_XSTR(FP_PYTHON_NEWEST_MINOR)

/* The help of --allow-untested-version (dump, replay). */
/* --blocking, shared by dump and bench. */
#define CLI_BLOCKING_HELP                                                              \
    "  --blocking       stop every thread (ptrace) for each sample and resume it:\n" \
    "                   consistent by construction; the target is paused briefly\n"

#define CLI_PAUSE_TORN_HELP                                                            \
    "  --pause-torn     a thread whose walk the running target tore twice is\n"   \
    "                   stopped alone (ptrace), walked again with every check\n"  \
    "                   and resumed: few samples lost as torn, that thread\n"      \
    "                   paused briefly now and then (not with --blocking)\n"

#define CLI_UNTESTED_HELP                                                               \
    "  --allow-untested-version\n"                                                      \
    "                   unwind a CPython newer than " CLI_NEWEST " with " CLI_NEWEST       \
    "'s knowledge\n"                                                                    \
    "                   (its own debug offsets, validated; the output says so)\n"

/* Exit statuses. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_ERROR 1
#define CLI_EXIT_USAGE 2

int cli_cmd_dump(int argc, char **argv);
int cli_cmd_bench(int argc, char **argv);
int cli_cmd_record(int argc, char **argv);

/* Parses a --reader value (auto, vm, mem; auto only when allow_auto) into
 * an enum fp_reader_kind; prints a message for `cmd` and returns -1 if it
 * is not one of them. */
int cli_parse_reader(const char *cmd, const char *value, int allow_auto, int *out);

/* Parses a non-negative integer option value; returns 0 on success. */
int cli_parse_uint(const char *s, unsigned long max, unsigned long *out);

/* Parses a finite number in (0, max]; returns 0 on success. */
int cli_parse_positive(const char *s, double max, double *out);

#endif
