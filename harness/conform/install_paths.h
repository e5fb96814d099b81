/* install_paths.h — where `frameproof conform` finds the in-target files
 * (groundtruth/ and scenarios/ with index.json) when no --targets is given,
 * relative to its own executable: no path is compiled into the binary. */
#ifndef CF_INSTALL_PATHS_H
#define CF_INSTALL_PATHS_H

#include <stddef.h>

/* Build tree: harness/cli/meson.build places this symlink next to the
 * binary, pointing at the source tree's targets/. */
#define CF_BUILD_TARGETS_LINK "frameproof-targets"
/* Installed layout: bindir -> datadir/frameproof; CF_INSTALLED_TARGETS_REL
 * is set by harness/cli/meson.build from the bindir and datadir options
 * (a relative path such as "../share/frameproof"). */
#ifndef CF_INSTALLED_TARGETS_REL
#define CF_INSTALLED_TARGETS_REL "../share/frameproof"
#endif
/* The file whose presence marks a targets directory. */
#define CF_TARGETS_MARKER "scenarios/index.json"

/* The default targets directory, as an absolute path without symlinks:
 * DIR/frameproof-targets in a build tree, else DIR/CF_INSTALLED_TARGETS_REL,
 * where DIR holds the running executable (/proc/self/exe), whichever holds
 * scenarios/index.json first.  CF_E_NOTFOUND with the places tried in err
 * when neither does; CF_E_IO or CF_E_LIMIT on other failures. */
int cf_default_targets_dir(char *out, size_t len, char *err, size_t errlen);

/* For --help: the candidates cf_default_targets_dir() tries, one per line,
 * each preceded by indent and followed by what it is, with ", used now" on
 * the one it picks now. */
int cf_default_targets_describe(char *out, size_t len, const char *indent);

#endif
