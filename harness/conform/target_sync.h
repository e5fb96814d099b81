/* target_sync.h — copies the in-target files (targets/groundtruth and
 * targets/scenarios, targets/live) into an interpreter's chroot before its
 * cases run. */
#ifndef CF_SYNC_H
#define CF_SYNC_H

#include <stddef.h>

/* Copies <targets>/groundtruth, <targets>/scenarios and <targets>/live
 * recursively into
 * <root>/tmp/frameproof-targets/ (CF_CHROOT_TARGETS).  Idempotent: a file
 * whose size and modification time already match is left alone, others are
 * replaced atomically and get the source's mtime; __pycache__ is skipped. */
int cf_sync_targets(const char *targets_dir, const char *root, char *err, size_t errlen);

#endif
