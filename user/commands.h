/* SPDX-License-Identifier: BSD-2-Clause */
/* Subcommands: each lives in its own cmd_<name>.c. */
#ifndef GPUBPF_COMMANDS_H
#define GPUBPF_COMMANDS_H

/* Each returns the process exit status. */
int cmd_record(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_convert(int argc, char **argv);

#endif
