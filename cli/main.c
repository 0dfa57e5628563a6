// SPDX-License-Identifier: GPL-2.0
/*
 * blksnap-storage - manage blksnap snapshots and their difference storage
 * kept in ordinary files.  This file only dispatches to the commands.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "common.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "create",   cmd_create,   "create a snapshot of devices, print its ID" },
	{ "add",      cmd_add,      "create or grow a storage file and give it to a snapshot" },
	{ "take",     cmd_take,     "take the snapshot: images appear" },
	{ "watch",    cmd_watch,    "grow the storage when the snapshot runs low" },
	{ "images",   cmd_images,   "original device to snapshot image" },
	{ "list",     cmd_list,     "list snapshots and their storage files" },
	{ "destroy",  cmd_destroy,  "destroy a snapshot, let go of its storage files" },
	{ "snapshot", cmd_snapshot, "a whole backup run around one command" },
	{ "cbt",      cmd_cbt,      "change block tracking: info, read, mark-dirty" },
	{ "ranges",   cmd_ranges,   "sector ranges a file would give the kernel" },
	{ "version",  cmd_version,  "tool and module versions" },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	fprintf(out,
		"Usage:\n"
		" %s <command> [options] [arguments]\n"
		" %s <command> --help\n"
		"\n"
		"Manage blksnap snapshots and their difference storage kept in\n"
		"ordinary files (ext2/3/4, xfs).\n"
		"\n"
		"Commands:\n", PROGRAM_NAME, PROGRAM_NAME);
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fprintf(out,
		"\n"
		"Options:\n"
		" -h, --help     display this help\n"
		" -V, --version  display the tool's version\n"
		"\n"
		"Devices are /dev nodes or mount points.  Sizes take K, M, G, T,\n"
		"P suffixes, as util-linux: 4K and 4KiB are 4096 bytes, 4KB is\n"
		"4000.  Storage files are recorded in\n"
		"$BLKSNAP_STATE_DIR (default /run/blksnap).\n"
		"\n"
		"Exit status:\n"
		" 0  success\n"
		" 1  runtime error (including: blksnap module not loaded)\n"
		" 2  usage error\n"
		" 3  snapshot corrupted (difference storage overflowed or failed)\n"
		"\n"
		"See blksnap-storage(8).\n");
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/* "help COMMAND" is the same as "COMMAND --help". */
static int run_help(int argc, char **argv)
{
	char help[] = "--help";
	char *args[] = { argv[1], help, NULL };
	const struct command *c;

	if (argc < 2) {
		usage(stdout);
		return EXIT_OK;
	}
	c = find_command(argv[1]);
	if (!c)
		return usage_error("unknown command '%s'", argv[1]);
	cmd_name = c->name;
	return c->run(2, args);
}

int main(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("%s %s\n", PROGRAM_NAME, CLI_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "help"))
		return run_help(argc - 1, argv + 1);
	c = find_command(argv[1]);
	if (!c)
		return usage_error("unknown command '%s'", argv[1]);
	cmd_name = c->name;
	signals_save_inherited();
	/*
	 * A write past the file size limit (ulimit -f) fails with EFBIG
	 * instead of ending the process halfway through a growth;
	 * storagefile refuses such a growth beforehand anyway.
	 */
	sigaction(SIGXFSZ, &(struct sigaction){ .sa_handler = SIG_IGN }, NULL);
	return c->run(argc - 1, argv + 1);
}
