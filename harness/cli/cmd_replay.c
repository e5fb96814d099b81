/* cmd_replay.c — `frameproof replay`: unwind a memory image (.fpimg)
 * offline and print the sample exactly as `dump` prints a live one, or
 * with --async the asyncio task graph the image holds as `dump --async`
 * prints it.  Each
 * thread's on_cpu comes from the scheduler state the image recorded (there
 * is no live /proc to ask), so the JSON equals the live `dump --json` taken
 * when the image was captured. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "async_output.h"
#include "cli.h"
#include "frameproof/async.h"
#include "frameproof/frameproof.h"
#include "frameproof/image.h"
#include "sample_output.h"

#define REPLAY_MSG_MAX 2048

#define REPLAY_ASYNC_TABLE_HEX 0x030e0000u /* 3.14: an image names asyncio's table */

static const char REPLAY_USAGE[] =
    "usage: frameproof replay FILE [--json] [--async] [--max-depth N] [--no-cache]\n"
    "                        [--allow-untested-version]\n"
    "\n"
    "Unwinds the memory image FILE (written by `frameproof snapshot`) and\n"
    "prints what `frameproof dump` printed for the live process.\n"
    "\n"
    "  --json           print the documented JSON form instead of text\n"
    "  --async          print the asyncio task graph the image holds instead, as\n"
    "                   `dump --async` does (an image from `snapshot --async`;\n"
    "                   \"stopped_ns\" is 0: nothing is stopped to read an image)\n"
    "  --max-depth N    frames per thread before the walk fails (default 65536;\n"
    "                   with --async: also coroutines per task)\n"
    "  --no-cache       do not cache code objects\n"
    CLI_UNTESTED_HELP
    "  --help           print this help\n"
    "\n"
    "Exit status: 0 on success; 1 with a one-line message on stderr on error\n"
    "(malformed image, incomplete sample; with --async, an image without a\n"
    "task graph or a graph that cannot be read); 2 on a usage error.\n";

int cli_cmd_replay(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"async", no_argument, NULL, 'A'},
        {"max-depth", required_argument, NULL, 'd'},
        {"no-cache", no_argument, NULL, 'n'},
        {"allow-untested-version", no_argument, NULL, 'U'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    fp_options o;
    fp_options_init(&o);
    unsigned long v;
    int json = 0, async = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "jd:nh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'A': async = 1; break;
        case 'd':
            if (cli_parse_uint(optarg, UINT32_MAX, &v) || v == 0) {
                fprintf(stderr, "frameproof replay: invalid --max-depth '%s'\n", optarg);
                return CLI_EXIT_USAGE;
            }
            o.max_depth = (uint32_t)v;
            break;
        case 'n': o.cache_code = false; break;
        case 'U': o.allow_untested = true; break;
        case 'h': fputs(REPLAY_USAGE, stdout); return CLI_EXIT_OK;
        default: fputs(REPLAY_USAGE, stderr); return CLI_EXIT_USAGE;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "frameproof replay: expected exactly one image file\n%s", REPLAY_USAGE);
        return CLI_EXIT_USAGE;
    }
    const char *path = argv[optind];
    char msg[REPLAY_MSG_MAX] = "";
    fp_image *img = NULL;
    fp_session *s = NULL;
    fp_sample *sm = NULL;
    fp_async_graph *g = NULL;
    fp_reader rd;
    fp_target_desc desc;
    fp_image_meta meta;
    int status = CLI_EXIT_ERROR;
    int rc = fp_image_open(path, &img, msg, sizeof msg);
    if (rc) {
        fprintf(stderr, "frameproof replay: %s\n", msg);
        goto out;
    }
    fp_reader_open_image(img, &rd);
    fp_image_get_target(img, &desc);
    fp_image_get_meta(img, &meta);
    if ((rc = fp_session_new(&o, &s)) || (rc = fp_sample_new(&sm))) {
        fprintf(stderr, "frameproof replay: %s\n", fp_error_describe(rc));
        goto out;
    }
    if ((rc = fp_session_attach_reader(s, &rd, &desc))) {
        fprintf(stderr, "frameproof replay: %s: %s\n", path, fp_session_get_errmsg(s));
        goto out;
    }
    fp_python_info py;
    fp_session_get_python(s, &py);
    if (async) {
        if ((rc = fp_async_graph_read_sample(s, sm, &g))) { /* as `dump --async` reads it */
            /* before 3.14 nothing in the image says whether it holds a graph:
             * a read past what it recorded is the sign */
            fprintf(stderr, "frameproof replay: %s: %s%s\n", path, fp_session_get_errmsg(s),
                    rc == FP_E_READ && py.hexversion < REPLAY_ASYNC_TABLE_HEX
                        ? " (an image holds a task graph when `snapshot --async` captured one)"
                        : "");
            goto out;
        }
        if (json)
            cli_async_output_json(stdout, meta.pid, &py, g, sm, NULL);
        else if (cli_async_output_text(stdout, meta.pid, &py, g, sm)) {
            fputs("frameproof replay: out of memory\n", stderr);
            goto out;
        }
        status = fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
        goto out;
    }
    rc = fp_session_sample(s, sm);
    if (!fp_sample_is_usable(sm, rc)) {
        fprintf(stderr, "frameproof replay: %s: %s\n", path, fp_session_get_errmsg(s));
        goto out;
    }
    if (json)
        cli_output_json(stdout, meta.pid, &py, sm);
    else
        cli_output_text(stdout, meta.pid, &py, fp_session_get_reader_name(s), sm);
    status = fflush(stdout) == 0 && rc == FP_OK ? CLI_EXIT_OK : CLI_EXIT_ERROR;
    if (rc) /* an incomplete sample: printed, and still a failure */
        fprintf(stderr, "frameproof replay: %s: %s\n", path, fp_session_get_errmsg(s));
out:
    fp_async_graph_free(g);
    fp_sample_free(sm);
    fp_session_free(s);
    fp_image_free(img);
    return status;
}
