/* conform_cli.h — entry point of `frameproof conform`, the conformance
 * harness that checks libframeproof against in-target ground truth. */
#ifndef CLI_CONFORM_CLI_H
#define CLI_CONFORM_CLI_H

/* Runs `frameproof conform`; argv[0] is "conform".  Returns the exit status. */
int cli_cmd_conform(int argc, char **argv);

#endif
