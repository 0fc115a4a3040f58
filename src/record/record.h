/* SPDX-License-Identifier: GPL-2.0 */
#ifndef OFFCPU_RECORD_H
#define OFFCPU_RECORD_H

/* offcpu record: returns the process exit status (0, 1 runtime error, 2 usage). */
int cmd_record(int argc, char **argv);

#endif
