/* SPDX-License-Identifier: GPL-2.0 */
#ifndef OFFCPU_REPORT_H
#define OFFCPU_REPORT_H

/* offcpu report: returns the process exit status. */
int cmd_report(int argc, char **argv);

#endif
