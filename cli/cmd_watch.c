// SPDX-License-Identifier: GPL-2.0
/* watch: grow a snapshot's storage file whenever the kernel asks. */
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "blksnap_ctl.h"
#include "cmds.h"
#include "common.h"
#include "watch_loop.h"

static const char watch_help[] =
	"Usage:\n"
	" blksnap-storage watch [options] FILE\n"
	"\n"
	"Wait for the snapshot's events (in the kernel: it reacts at once).\n"
	"On low free space, grow the storage at FILE by the amount the kernel\n"
	"requests or by --step, whichever is larger: each growth is a new\n"
	"unnamed file next to FILE, given to the snapshot (FILE itself is made\n"
	"by the first growth if missing).  Growth never passes --limit, nor leaves\n"
	"the filesystem less than min(5%, 256 MiB) free; reaching either is\n"
	"said once on stderr and watching goes on.  A growth that fails is\n"
	"logged and tried twice more, a second apart.  Every growth is logged on\n"
	"stdout.  Ends when the snapshot is destroyed or on SIGINT, SIGTERM,\n"
	"SIGQUIT, SIGHUP or SIGPIPE (unless started with those two ignored, as\n"
	"by nohup) with exit 0, giving its spare first; on a corrupted event\n"
	"prints the device and error and exits 3.\n"
	"If FILE is on a device of the snapshot, the next growth is made ahead\n"
	"and kept as a spare, so that an event is met with no write to it.\n"
	"\n"
	"Options:\n"
	" -s, --snapshot ID  the snapshot (may be left out if only one exists)\n"
	"     --step SIZE    grow by at least SIZE (default: what is requested)\n"
	"     --limit SIZE   never let the storage at FILE pass SIZE (default:\n"
	"                    none)\n"
	"     --json         one JSON object per event line\n"
	" -h, --help         display this help\n";

enum { OPT_STEP = 256, OPT_LIMIT, OPT_JSON };

static const struct option watch_options[] = {
	{ "snapshot", required_argument, NULL, 's' },
	{ "step", required_argument, NULL, OPT_STEP },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void on_stop_signal(int sig)
{
	(void)sig;
	watch_loop_interrupt();
}

/*
 * No SA_RESTART: the kernel wait must return -EINTR. A hang-up (the
 * terminal closed, logrotate's kill -HUP), SIGQUIT and a reader that went
 * away (watch ... | head) stop it like SIGTERM: by default each would end
 * it wherever it is, a growth half done or a spare not given. A hang-up
 * or a broken pipe that the caller ignores (nohup, systemd) stays ignored:
 * watching goes on, which is what the caller asked for.
 */
static void catch_stop_signals(void)
{
	static const int stop_signals[] = {
		SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE,
	};
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++) {
		int sig = stop_signals[i];

		if ((sig == SIGHUP || sig == SIGPIPE) &&
		    signal_inherited_ignored(sig))
			continue;
		sigaction(sig, &sa, NULL);
	}
}

static int parse(int argc, char **argv, struct watch_opts *o,
		 const char **snapshot)
{
	int c;

	optind = 0;
	while ((c = next_option(argc, argv, ":s:h", watch_options)) != -1) {
		switch (c) {
		case 'h':
			return show_help(watch_help);
		case 's':
			*snapshot = optarg;
			break;
		case OPT_STEP:
			if (!parse_size_arg("--step", optarg, &o->step))
				return EXIT_USAGE;
			break;
		case OPT_LIMIT:
			if (!parse_size_arg("--limit", optarg, &o->limit))
				return EXIT_USAGE;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return usage_error(argc == optind ? "FILE expected"
						  : "too many arguments");
	return -1;
}

int cmd_watch(int argc, char **argv)
{
	struct watch_opts o = { .log = stdout };
	struct blk_snap_uuid given, id;
	const char *snapshot = NULL;
	char why[WHY_LEN];
	struct storage s;
	int ret, ctl;

	ret = parse(argc, argv, &o, &snapshot);
	if (ret >= 0)
		return ret;
	if (snapshot && !parse_snapshot_id(snapshot, &given))
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
	if (storage_open(&s, ctl, &id, argv[optind], why)) {
		report(argv[optind], "%s", why);
		close(ctl);
		return EXIT_RUNTIME;
	}
	catch_stop_signals();
	ret = watch_loop(&s, &o);
	storage_close(&s);	/* the kernel holds what it was given */
	close(ctl);
	return ret;
}
