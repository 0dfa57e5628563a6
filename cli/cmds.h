/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The commands.  Each takes the arguments after the program name (argv[0]
 * is the command's name), returns an exit code, and prints its own --help.
 */
#ifndef BLKSNAP_CLI_CMDS_H
#define BLKSNAP_CLI_CMDS_H

int cmd_create(int argc, char **argv);
int cmd_take(int argc, char **argv);
int cmd_destroy(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_images(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_add(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_cbt(int argc, char **argv);
int cmd_ranges(int argc, char **argv);

#endif
