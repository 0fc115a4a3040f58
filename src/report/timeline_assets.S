/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The timeline page's style, markup and scripts (src/report/timeline/), as
 * NUL-ended strings in offcpu (timeline.h): real files in the tree, read by
 * the assembler at build time. Paths are from the tree's top, where make runs.
 */
#define ASSET(name, file)                  \
	.global name;                      \
	.type name, @object;               \
name:                                      \
	.incbin file;                      \
	.byte 0;                           \
	.size name, . - name

	.section .rodata
ASSET(timeline_css, "src/report/timeline/page.css")
ASSET(timeline_html, "src/report/timeline/page.html")
ASSET(timeline_js, "src/report/timeline/page.js")
ASSET(timeline_path_js, "src/report/timeline/path.js")

	.section .note.GNU-stack, "", @progbits
