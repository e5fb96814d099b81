/* cli.h — subcommands of the frameproof command-line tool. */
#ifndef FP_CLI_H
#define FP_CLI_H

/* Exit statuses. */
#define FP_EXIT_OK 0
#define FP_EXIT_ERROR 1
#define FP_EXIT_USAGE 2

int fp_cmd_dump(int argc, char **argv);
int fp_cmd_bench(int argc, char **argv);

/* Parses a non-negative integer option value; returns 0 on success. */
int fp_parse_uint(const char *s, unsigned long max, unsigned long *out);

#endif
