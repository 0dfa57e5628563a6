// SPDX-License-Identifier: GPL-2.0
/*
 * snapshot: a whole backup run.  Create the snapshot, give it storage, take
 * it, run COMMAND with the image paths in its environment while a thread
 * grows the storage, then destroy the snapshot and release the file.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "blksnap_ctl.h"
#include "cmds.h"
#include "common.h"
#include "devices.h"
#include "state.h"
#include "take_filter.h"
#include "watch_loop.h"

static const char snapshot_help[] =
	"Usage:\n"
	" blksnap-storage snapshot --storage FILE --size SIZE [options]\n"
	"                          DEVICE... -- COMMAND [ARGS...]\n"
	"\n"
	"Create a snapshot of the DEVICEs, give it FILE grown by SIZE as\n"
	"storage, take it, and run COMMAND while growing the storage as 'watch' does\n"
	"(growth is logged on stderr, so COMMAND's stdout stays clean).  Then\n"
	"destroy the snapshot (which lets go of FILE) and, if this command\n"
	"created FILE, delete it.  COMMAND's environment has:\n"
	"  BLKSNAP_ID         the snapshot ID\n"
	"  BLKSNAP_IMAGES     the image paths, space-separated, in DEVICE order\n"
	"  BLKSNAP_IMAGE_<n>  the image of the n-th DEVICE (from 0)\n"
	"  BLKSNAP_DEVICE_<n> the n-th DEVICE as given\n"
	"  BLKSNAP_STORAGE    the storage file\n"
	"Exit status: COMMAND's (128+N if killed by signal N), 3 if the\n"
	"snapshot got corrupted, 1 or 2 if the run could not start.\n"
	"\n"
	"Options:\n"
	"     --storage FILE  the storage file (ext2/3/4 or xfs)\n"
	"     --size SIZE     initial storage, e.g. 4G\n"
	"     --step SIZE     grow by at least SIZE (default: what is requested)\n"
	"     --limit SIZE    never let the storage at FILE pass SIZE\n"
	"     --keep-storage  keep a FILE this command created\n"
	" -h, --help          display this help\n";

enum { OPT_STORAGE = 256, OPT_SIZE, OPT_STEP, OPT_LIMIT, OPT_KEEP };

static const struct option snapshot_options[] = {
	{ "storage", required_argument, NULL, OPT_STORAGE },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "step", required_argument, NULL, OPT_STEP },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "keep-storage", no_argument, NULL, OPT_KEEP },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct run {
	const char *storage_path;
	uint64_t size;
	bool keep;
	char **devices;		/* as given */
	int ndevices;
	char **command;
	struct watch_opts wo;

	int ctl;
	struct blk_snap_uuid id;
	bool created;		/* the snapshot exists */
	struct storage s;
	bool storage_open;
	pthread_t watcher;
	bool watching;
	int watch_status;
};

static volatile pid_t child_pid;
/* A signal to pass on that came before COMMAND was started. */
static volatile sig_atomic_t stop_signal;

static int parse_option(struct run *r, int c)
{
	switch (c) {
	case OPT_STORAGE:
		r->storage_path = optarg;
		return -1;
	case OPT_SIZE:
		return parse_size_arg("--size", optarg, &r->size) ? -1 : EXIT_USAGE;
	case OPT_STEP:
		return parse_size_arg("--step", optarg, &r->wo.step) ? -1 : EXIT_USAGE;
	case OPT_LIMIT:
		return parse_size_arg("--limit", optarg, &r->wo.limit) ? -1 : EXIT_USAGE;
	case OPT_KEEP:
		r->keep = true;
		return -1;
	case 'h':
		return show_help(snapshot_help);
	}
	return EXIT_USAGE;
}

/* Options and DEVICEs before "--", COMMAND after it. */
static int parse(int argc, char **argv, struct run *r)
{
	int c, ret, dashes = 1;

	while (dashes < argc && strcmp(argv[dashes], "--"))
		dashes++;
	optind = 0;
	while ((c = next_option(dashes, argv, ":h", snapshot_options)) != -1)
		if ((ret = parse_option(r, c)) >= 0)
			return ret;
	if (!r->storage_path || !r->size)
		return usage_error("--storage FILE and --size SIZE are required");
	if (optind >= dashes)
		return usage_error("at least one DEVICE expected");
	if (dashes >= argc - 1)
		return usage_error("'-- COMMAND' expected after the devices");
	r->devices = argv + optind;
	r->ndevices = dashes - optind;
	r->command = argv + dashes + 1;
	return -1;
}

/* The signals passed on to COMMAND. */
static void forwarded_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGQUIT);
}

static void *watcher_main(void *arg)
{
	struct run *r = arg;
	sigset_t usr1, forwarded;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	/* They are the main thread's, which knows COMMAND's pid. */
	forwarded_signals(&forwarded);
	pthread_sigmask(SIG_BLOCK, &forwarded, NULL);
	r->watch_status = watch_loop(&r->s, &r->wo);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	watch_loop_interrupt();
}

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
	else
		stop_signal = sig;
}

/*
 * SIGINT and SIGQUIT from the terminal reach COMMAND already (the whole
 * foreground group gets them); sent to us alone (kill, a supervisor),
 * they are passed on as SIGTERM is.
 */
static void forward_if_sent(int sig, siginfo_t *info, void *ucontext)
{
	(void)ucontext;
	if (info && info->si_code <= 0)	/* SI_USER, SI_QUEUE, SI_TKILL */
		forward_signal(sig);
}

/*
 * Main thread: Ctrl-C and friends reach COMMAND through the terminal; we
 * must survive them to clean up.  SIGTERM/SIGHUP are passed on, and
 * SIGINT/SIGQUIT when sent to us alone; SIGPIPE is ignored.  SIGUSR1 is
 * only for the watcher thread.
 */
static void setup_signals(void)
{
	struct sigaction sa;
	sigset_t usr1;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = forward_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_sigaction = forward_if_sent;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = SIG_IGN;
	/*
	 * A reader that went away (snapshot ... | head): writes fail, the
	 * cleanup goes on.
	 */
	sigaction(SIGPIPE, &sa, NULL);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
}

/* BLKSNAP_* variables for COMMAND, images in DEVICE order. */
static int export_images(struct run *r, const dev_t *devs)
{
	struct blk_snap_image_info *img;
	char name[64], path[64], id[BSC_UUID_LEN + 1], *all;
	unsigned int count;
	int ret = bsc_collect_images(r->ctl, &r->id, &img, &count);

	if (ret)
		return fail("cannot list the snapshot's images", ret);
	all = calloc((size_t)r->ndevices, sizeof(path));
	for (int i = 0; all && i < r->ndevices; i++) {
		path[0] = '\0';
		for (unsigned int k = 0; k < count; k++)
			if (bsc_dev_t(img[k].orig_dev_id) == devs[i] &&
			    bsc_dev_t(img[k].image_dev_id))
				image_path(bsc_dev_t(img[k].image_dev_id), path,
					   sizeof(path));
		if (!path[0]) {
			report(r->devices[i], "the snapshot lists no image for it");
			free(all);
			free(img);
			return EXIT_RUNTIME;
		}
		snprintf(name, sizeof(name), "BLKSNAP_IMAGE_%d", i);
		setenv(name, path, 1);
		snprintf(name, sizeof(name), "BLKSNAP_DEVICE_%d", i);
		setenv(name, r->devices[i], 1);
		if (i)
			strcat(all, " ");
		strcat(all, path);
	}
	bsc_uuid_format(&r->id, id);
	setenv("BLKSNAP_ID", id, 1);
	setenv("BLKSNAP_IMAGES", all ? all : "", 1);
	setenv("BLKSNAP_STORAGE", r->s.path, 1);
	free(all);
	free(img);
	return all ? EXIT_OK : fail(NULL, -ENOMEM);
}

static void exec_command(char **command)
{
	sigset_t none;
	int err;

	/* Ignored signals stay ignored across exec: COMMAND gets ours. */
	signals_restore_inherited();
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execvp(command[0], command);
	err = errno;
	report(command[0], "%s", strerror(err));
	_exit(err == ENOENT ? 127 : 126);
}

/* Run COMMAND to its end; its status in shell terms. */
static int run_command(char **command)
{
	sigset_t forwarded, old;
	int status;
	pid_t pid;

	/*
	 * Held back until child_pid is set: one that came in between would
	 * be lost (the child, before exec, has our handler and no child).
	 */
	forwarded_signals(&forwarded);
	pthread_sigmask(SIG_BLOCK, &forwarded, &old);
	if (stop_signal) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		report(NULL, "%s before COMMAND started: it is not run; "
		       "cleaning up", strsignal(stop_signal));
		return 128 + stop_signal;
	}
	pid = fork();
	if (pid < 0) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return fail("fork", -errno);
	}
	if (pid == 0)
		exec_command(command);	/* restores dispositions, then mask */
	child_pid = pid;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return fail("waitpid", -errno);
	child_pid = 0;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* Create, add storage, take; reports and returns an exit code or -1. */
static int prepare(struct run *r, dev_t *devs)
{
	char why[WHY_LEN];
	struct growth g;
	int ret;

	if (!resolve_devices(r->devices, r->ndevices, devs))
		return EXIT_RUNTIME;
	if (storage_check_path(r->storage_path, why)) {
		report(r->storage_path, "%s", why);
		return EXIT_RUNTIME;
	}
	r->ctl = open_ctl();
	if (r->ctl < 0)
		return EXIT_RUNTIME;
	ret = bsc_snapshot_create(r->ctl, devs, (unsigned int)r->ndevices, &r->id);
	if (ret)
		return create_failed(NULL, ret);
	r->created = true;
	if (storage_open(&r->s, r->ctl, &r->id, r->storage_path, why) == 0) {
		r->storage_open = true;
		if (storage_grow(&r->s, r->size, &g, why) == 0)
			ret = bsc_snapshot_take(r->ctl, &r->id);
		else
			ret = 1;
	} else {
		ret = 1;
	}
	if (ret == 1) {
		report(r->storage_path, "%s", why);
		return EXIT_RUNTIME;
	}
	if (ret)
		return fail("cannot take the snapshot", ret);
	/*
	 * Before the watcher starts: its growths then read no image.  A
	 * signal meanwhile reaches our handlers after it (COMMAND is then
	 * not run, and the snapshot destroyed).
	 */
	take_maps_save(r->ctl, &r->id, NULL);
	return export_images(r, devs) ? EXIT_RUNTIME : -1;
}

/* Destroy, stop the watcher, forget; the file goes if we made it. */
static int teardown(struct run *r)
{
	char why[WHY_LEN];
	int ret, status = EXIT_OK;

	if (r->created && (ret = bsc_snapshot_destroy(r->ctl, &r->id))) {
		fail("cannot destroy the snapshot", ret);
		status = EXIT_RUNTIME;
	}
	if (r->watching) {
		pthread_kill(r->watcher, SIGUSR1);
		pthread_join(r->watcher, NULL);
	}
	if (r->storage_open && r->s.appended && status == EXIT_OK) {
		if (storage_release(&r->s, why)) {
			report(r->s.path, "cannot forget it: %s", why);
			status = EXIT_RUNTIME;
		} else if (r->s.created && !r->keep &&
			   (ret = storage_remove(&r->s))) {
			/* By inode, through the checked directory: not another file. */
			report(r->s.path, "not deleted: %s", ret == -ESTALE ?
			       "the name now leads to another file, left as it "
			       "is; delete the one this command created yourself" :
			       strerror(-ret));
		}
	}
	if (r->created && status == EXIT_OK)
		state_forget(&r->id);
	if (r->storage_open)
		storage_close(&r->s);
	if (r->ctl >= 0)
		close(r->ctl);
	return status;
}

int cmd_snapshot(int argc, char **argv)
{
	struct run r = { .ctl = -1, .wo = { .log = stderr } };
	int ret, status;
	dev_t *devs;

	ret = parse(argc, argv, &r);
	if (ret >= 0)
		return ret;
	devs = calloc((size_t)r.ndevices, sizeof(*devs));
	if (!devs)
		return fail(NULL, -ENOMEM);
	setup_signals();
	status = prepare(&r, devs);
	if (status < 0) {
		r.watching = !pthread_create(&r.watcher, NULL, watcher_main, &r);
		if (!r.watching)
			report(NULL, "cannot start the watcher; storage will not grow");
		status = run_command(r.command);
	}
	ret = teardown(&r);
	free(devs);
	if (r.watching && r.watch_status == EXIT_CORRUPTED)
		return EXIT_CORRUPTED;
	return status == EXIT_OK ? ret : status;
}
