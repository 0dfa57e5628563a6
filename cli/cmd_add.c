// SPDX-License-Identifier: GPL-2.0
/* add: create or grow a storage file and give the growth to a snapshot. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "blksnap_ctl.h"
#include "cmds.h"
#include "common.h"
#include "storage.h"

static const char add_help[] =
	"Usage:\n"
	" blksnap-storage add [options] FILE SIZE\n"
	"\n"
	"Give the snapshot SIZE bytes (e.g. 4G) more difference storage at\n"
	"FILE, on ext2/3/4 or xfs.  The first storage at FILE is FILE itself;\n"
	"each later growth is an unnamed file in the same directory (a file\n"
	"the kernel holds cannot grow).  The kernel holds them all until\n"
	"'destroy': nobody can delete, move, write or unmount them.  An\n"
	"existing FILE must be empty or already this snapshot's storage; one\n"
	"that blksnap-storage made and no snapshot holds any more is removed.\n"
	"\n"
	"If FILE is on a device of the snapshot and the snapshot is taken, only\n"
	"the new sectors that were free at take time are given (the rest is\n"
	"reported as withheld): the image still shows the old content of\n"
	"blocks freed since.\n"
	"\n"
	"If the kernel refuses the space, the growth is freed and FILE is not\n"
	"made.  A growth past the file size limit (ulimit -f) is refused\n"
	"before anything is allocated.\n"
	"\n"
	"Options:\n"
	" -s, --snapshot ID  the snapshot (may be left out if only one exists)\n"
	" -h, --help         display this help\n";

static const struct option add_options[] = {
	{ "snapshot", required_argument, NULL, 's' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void print_growth(const struct storage *s, const struct growth *g)
{
	char text[BSC_UUID_LEN + 1];

	bsc_uuid_format(&s->id, text);
	printf("%s: size %" PRIu64 " bytes, %" PRIu64 " sectors given to "
	       "snapshot %s", s->path, g->new_size, g->given_sectors, text);
	if (g->take_checked)
		printf(", %" PRIu64 " sectors withheld (in use at take time)",
		       g->withheld_sectors);
	if (g->unaligned_sectors)
		printf(", %" PRIu64 " sectors lost to alignment",
		       g->unaligned_sectors);
	printf("\n");
}

int cmd_add(int argc, char **argv)
{
	struct blk_snap_uuid given, id;
	const char *snapshot = NULL;
	char why[WHY_LEN];
	struct storage s;
	struct growth g;
	uint64_t bytes;
	int c, ctl, ret;

	optind = 0;
	while ((c = next_option(argc, argv, ":s:h", add_options)) != -1) {
		if (c == 'h')
			return show_help(add_help);
		if (c != 's')
			return EXIT_USAGE;
		snapshot = optarg;
	}
	if (argc - optind != 2)
		return usage_error(argc - optind < 2 ? "FILE and SIZE expected"
						     : "too many arguments");
	if (snapshot && !parse_snapshot_id(snapshot, &given))
		return EXIT_USAGE;
	if (!parse_size_arg("SIZE", argv[optind + 1], &bytes))
		return EXIT_USAGE;
	if (storage_check_path(argv[optind], why)) {
		report(argv[optind], "%s", why);
		return EXIT_RUNTIME;
	}

	ctl = open_ctl();
	if (ctl < 0)
		return EXIT_RUNTIME;
	ret = pick_snapshot(ctl, snapshot ? &given : NULL, &id);
	if (ret) {
		close(ctl);
		return ret;
	}
	ret = storage_open(&s, ctl, &id, argv[optind], why);
	if (!ret) {
		ret = storage_grow(&s, bytes, &g, why);
		if (!ret)
			print_growth(&s, &g);
		if (!ret && !g.given_sectors) {
			/* The kernel holds them unused: a retry gets others. */
			snprintf(why, sizeof(why), "none of the new sectors was "
				 "free when the snapshot was taken; the snapshot "
				 "holds them unused, so that the next growth "
				 "gets other blocks: add again for more");
			ret = -ENOSPC;
		}
		storage_close(&s);
	}
	if (ret)
		report(argv[optind], "%s", why);
	close(ctl);
	return ret ? EXIT_RUNTIME : EXIT_OK;
}
