/* target_sync.h — copies the in-target files (targets/groundtruth and
 * targets/scenarios, targets/live) into an interpreter's chroot before its
 * cases run. */
#ifndef CF_SYNC_H
#define CF_SYNC_H

#include <stddef.h>

/* The directory, inside a chroot, that holds the copy of targets_dir:
 * CF_CHROOT_TARGETS, a dash and 16 hex digits of a hash of targets_dir's
 * canonical path (as given when it has none), so that two checkouts never
 * share a copy while runs from one checkout do.  out holds at least
 * CF_CHROOT_TARGETS_MAX bytes. */
void cf_chroot_targets(const char *targets_dir, char *out, size_t outlen);

/* Copies <targets>/groundtruth, <targets>/scenarios and <targets>/live
 * recursively into <root> + cf_chroot_targets(targets_dir).  Idempotent: a
 * file whose size and modification time already match is left alone,
 * others are replaced atomically and get the source's mtime; __pycache__
 * is skipped. */
int cf_sync_targets(const char *targets_dir, const char *root, char *err, size_t errlen);

#endif
