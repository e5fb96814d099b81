/* conform_cli.h — entry point of `frameproof conform`, the conformance
 * harness that checks libframeproof against in-target ground truth. */
#ifndef FP_CONFORM_CLI_H
#define FP_CONFORM_CLI_H

/* Runs `frameproof conform`; argv[0] is "conform".  Returns the exit status. */
int fp_cmd_conform(int argc, char **argv);

#endif
