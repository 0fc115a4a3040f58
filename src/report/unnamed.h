/* SPDX-License-Identifier: GPL-2.0 */
/*
 * offcpu report's warning about user frames without a symbol (unnamed.c):
 * one line on stderr, or nothing when every frame has a name.
 */
#ifndef OFFCPU_REPORT_UNNAMED_H
#define OFFCPU_REPORT_UNNAMED_H

#include "profile.h"
#include "debuginfo.h"

/*
 * How many user frames of @p are named OBJ+0xOFFSET, the share of the
 * off-CPU time (else of the samples) whose stacks hold one, their objects
 * (most time first), and what would name them (@di: what debuginfod did).
 */
void warn_unnamed(const struct profile *p, const struct debuginfo_stats *di);

#endif
