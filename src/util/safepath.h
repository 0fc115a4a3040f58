/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Opening a directory by a path that other users may have put links in:
 * component by component, a symbolic link followed only where the kernel's
 * fs.protected_symlinks would follow it.
 */
#ifndef OFFCPU_SAFEPATH_H
#define OFFCPU_SAFEPATH_H

#include <stddef.h>

/*
 * An O_PATH descriptor of directory @path (relative to the current
 * directory), or -errno with what stopped it in @why (may stay "").
 */
int safepath__open_dir(const char *path, char *why, size_t len);

#endif
