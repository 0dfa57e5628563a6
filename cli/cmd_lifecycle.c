// SPDX-License-Identifier: GPL-2.0
/* Snapshot lifecycle: create, take, destroy, list, images, version. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include "blksnap_ctl.h"
#include "cmds.h"
#include "common.h"
#include "devices.h"
#include "json.h"
#include "state.h"
#include "storage.h"
#include "take_filter.h"

#define DEVICE_TEXT_LEN 288

static const struct option help_and_json[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, 'j' },
	{ NULL, 0, NULL, 0 },
};

/*
 * The options every lifecycle command shares: --help, and --json where
 * @json is not NULL.  Returns -1 to go on, else the exit code.
 */
static int parse_common(int argc, char **argv, const char *help, bool *json)
{
	int c;

	optind = 0;
	while ((c = next_option(argc, argv, ":h", help_and_json)) != -1) {
		if (c == 'h')
			return show_help(help);
		if (c == 'j' && json) {
			*json = true;
			continue;
		}
		if (c == 'j')
			return usage_error("unrecognized option '--json'");
		return EXIT_USAGE;
	}
	return -1;
}

/* Exactly one snapshot ID argument. */
static int one_id(int argc, char **argv, struct blk_snap_uuid *id)
{
	if (argc - optind != 1)
		return usage_error(argc == optind ? "snapshot ID expected"
						   : "too many arguments");
	return parse_snapshot_id(argv[optind], id) ? -1 : EXIT_USAGE;
}

static int snapshot_error(const struct blk_snap_uuid *id, int err,
			  const char *doing)
{
	char text[BSC_UUID_LEN + 1];

	bsc_uuid_format(id, text);
	if (err == -ESRCH)
		report(text, "no such snapshot");
	else
		report(text, "%s: %s", doing, strerror(-err));
	return EXIT_RUNTIME;
}

/* ------------------------------------------------------------------ */

static const char create_help[] =
	"Usage:\n"
	" blksnap-storage create [options] DEVICE...\n"
	"\n"
	"Create a snapshot of the devices (/dev nodes or mount points) and\n"
	"print its ID.  Give it storage with 'add', then 'take' it.\n"
	"\n"
	"Options:\n"
	" -h, --help  display this help\n";

int cmd_create(int argc, char **argv)
{
	char text[BSC_UUID_LEN + 1];
	struct blk_snap_uuid id;
	int ret, ctl, n;
	dev_t *devs;

	ret = parse_common(argc, argv, create_help, NULL);
	if (ret >= 0)
		return ret;
	n = argc - optind;
	if (n < 1)
		return usage_error("at least one DEVICE expected");
	devs = calloc((size_t)n, sizeof(*devs));
	if (!devs)
		return fail(NULL, -ENOMEM);
	ret = EXIT_RUNTIME;
	if (resolve_devices(argv + optind, n, devs) && (ctl = open_ctl()) >= 0) {
		int err = bsc_snapshot_create(ctl, devs, (unsigned int)n, &id);

		if (err) {
			create_failed(n == 1 ? argv[optind] : "devices", err);
		} else {
			bsc_uuid_format(&id, text);
			printf("%s\n", text);
			ret = EXIT_OK;
		}
		close(ctl);
	}
	free(devs);
	return ret;
}

/* ------------------------------------------------------------------ */

static const char take_help[] =
	"Usage:\n"
	" blksnap-storage take [options] ID\n"
	"\n"
	"Take the snapshot: from now on writes to its devices copy the old\n"
	"data to the difference storage, and /dev/blksnap-imageN appear\n"
	"(see 'images').  Then save which blocks were free on each device of\n"
	"the snapshot that holds its storage, so that growths of that storage\n"
	"need not read the images: one read-only mount of the image and one\n"
	"walk of its file system per such device.  Signals that would end the\n"
	"command (INT, TERM, HUP, QUIT) wait until then: the snapshot is\n"
	"taken, and the exit status says so.\n"
	"\n"
	"Options:\n"
	" -h, --help  display this help\n";

int cmd_take(int argc, char **argv)
{
	struct blk_snap_uuid id;
	int ret, ctl;

	ret = parse_common(argc, argv, take_help, NULL);
	if (ret < 0)
		ret = one_id(argc, argv, &id);
	if (ret >= 0)
		return ret;
	ctl = open_ctl();
	if (ctl < 0)
		return EXIT_RUNTIME;
	ret = bsc_snapshot_take(ctl, &id);
	/*
	 * Read now, once, so that growths later need no image read; a
	 * failure is said and leaves that read to the next growth.  Taken,
	 * the exit status must say so: a signal meanwhile is held back and
	 * only said, and a broken pipe on stderr must not end us.
	 */
	if (!ret) {
		int sig = 0;

		signal(SIGPIPE, SIG_IGN);
		take_maps_save(ctl, &id, &sig);
		if (sig)
			report(NULL, "%s while saving which blocks were free at "
			       "take time: the snapshot is taken",
			       strsignal(sig));
	}
	close(ctl);
	return ret ? snapshot_error(&id, ret, "cannot take it") : EXIT_OK;
}

/* ------------------------------------------------------------------ */

static const char destroy_help[] =
	"Usage:\n"
	" blksnap-storage destroy [options] ID\n"
	"\n"
	"Destroy the snapshot: it returns once the kernel has finished with\n"
	"the storage files 'add', 'watch' or 'snapshot' gave it and let them\n"
	"go; then forget them.  Files of later growths had no name and are\n"
	"gone; the named files are left: delete them when you no longer need\n"
	"them (the next 'add' of the same path removes them too).\n"
	"\n"
	"Options:\n"
	" -h, --help  display this help\n";

/* Forget the snapshot's files; says which ones remain. */
static int release_files(const struct blk_snap_uuid *id)
{
	struct state_file *files;
	char why[WHY_LEN];
	bool immutable;
	size_t count;
	int ret = state_files(id, &files, &count), status = EXIT_OK;

	if (ret)
		return state_report(ret);
	for (size_t i = 0; i < count; i++) {
		ret = storage_release_path(&files[i], &immutable, why);
		/* The kernel let it go; say where it may be, to delete it. */
		if (ret)
			report(files[i].path, "%s; record forgotten; if its "
			       "directory was moved, 'find MOUNTPOINT -xdev "
			       "-inum %llu' on device %u:%u may find it",
			       ret == -ENOENT ? "not found at its recorded path"
					      : why,
			       (unsigned long long)files[i].ino,
			       major(files[i].dev), minor(files[i].dev));
		else if (immutable)	/* the snapshot is gone: safe now */
			printf("%s: released, still immutable (pinned by an "
			       "older blksnap-storage): 'chattr -i' it, then "
			       "remove it when no longer needed\n",
			       files[i].path);
		else
			printf("%s: released, not deleted (remove it when no "
			       "longer needed)\n", files[i].path);
	}
	state_free_files(files, count);
	ret = state_forget(id);
	if (ret)
		status = state_report(ret);
	return status;
}

int cmd_destroy(int argc, char **argv)
{
	struct state_file *files;
	struct blk_snap_uuid id;
	size_t count = 0;
	int ret, ctl;

	ret = parse_common(argc, argv, destroy_help, NULL);
	if (ret < 0)
		ret = one_id(argc, argv, &id);
	if (ret >= 0)
		return ret;
	/* Records that cannot be trusted: say so before destroying anything. */
	ret = state_files(&id, &files, &count);
	if (ret)
		return state_report(ret);
	state_free_files(files, count);
	ctl = open_ctl();
	if (ctl < 0)
		return EXIT_RUNTIME;
	ret = bsc_snapshot_destroy(ctl, &id);
	close(ctl);
	if (ret == -ENODEV)	/* older modules say so for unknown ids */
		ret = -ESRCH;
	/* Gone from the kernel but still recorded: its files are free. */
	if (ret == -ESRCH && state_files(&id, &files, &count) == 0 && count) {
		state_free_files(files, count);
		ret = 0;
	}
	if (ret)
		return snapshot_error(&id, ret, "cannot destroy it");
	return release_files(&id);
}

/* ------------------------------------------------------------------ */

/* The images of a snapshot; an untaken one has none (count 0). */
static int snapshot_images(int ctl, const struct blk_snap_uuid *id,
			   struct blk_snap_image_info **img,
			   unsigned int *count, bool *taken)
{
	int ret = bsc_collect_images(ctl, id, img, count);

	*taken = false;
	if (ret == -ENODEV) {
		*img = NULL;
		*count = 0;
		return 0;
	}
	for (unsigned int i = 0; !ret && i < *count; i++)
		if (bsc_dev_t((*img)[i].image_dev_id))
			*taken = true;
	return ret;
}

static const char images_help[] =
	"Usage:\n"
	" blksnap-storage images [options] ID\n"
	"\n"
	"Print, for each device of a taken snapshot, the original device and\n"
	"its image, one pair per line:  /dev/sdb1 /dev/blksnap-image0\n"
	"\n"
	"Options:\n"
	"     --json  one JSON object (see blksnap-storage(8))\n"
	" -h, --help  display this help\n";

static void json_images(struct json *j, const struct blk_snap_image_info *img,
			unsigned int count)
{
	char text[DEVICE_TEXT_LEN];

	json_array_begin(j, "images");
	for (unsigned int i = 0; i < count; i++) {
		dev_t orig = bsc_dev_t(img[i].orig_dev_id);
		dev_t image = bsc_dev_t(img[i].image_dev_id);

		json_object_begin(j, NULL);
		device_name(orig, text, sizeof(text));
		json_string(j, "original", text);
		device_number(orig, text, sizeof(text));
		json_string(j, "original_dev", text);
		image_path(image, text, sizeof(text));
		json_string(j, "image", image ? text : "");
		device_number(image, text, sizeof(text));
		json_string(j, "image_dev", text);
		json_object_end(j);
	}
	json_array_end(j);
}

static void print_images(const struct blk_snap_image_info *img,
			 unsigned int count)
{
	char orig[DEVICE_TEXT_LEN], image[DEVICE_TEXT_LEN];

	for (unsigned int i = 0; i < count; i++) {
		dev_t dev = bsc_dev_t(img[i].image_dev_id);

		device_name(bsc_dev_t(img[i].orig_dev_id), orig, sizeof(orig));
		if (dev)
			image_path(dev, image, sizeof(image));
		else
			snprintf(image, sizeof(image), "-");
		printf("%s %s\n", orig, image);
	}
}

int cmd_images(int argc, char **argv)
{
	char text[BSC_UUID_LEN + 1];
	struct blk_snap_image_info *img;
	struct blk_snap_uuid id;
	unsigned int count;
	bool json = false, taken;
	struct json j;
	int ret, ctl;

	ret = parse_common(argc, argv, images_help, &json);
	if (ret < 0)
		ret = one_id(argc, argv, &id);
	if (ret >= 0)
		return ret;
	ctl = open_ctl();
	if (ctl < 0)
		return EXIT_RUNTIME;
	ret = snapshot_images(ctl, &id, &img, &count, &taken);
	close(ctl);
	bsc_uuid_format(&id, text);
	if (!ret && !taken) {
		free(img);
		report(text, "not taken yet (no images)");
		return EXIT_RUNTIME;
	}
	if (ret)
		return snapshot_error(&id, ret, "cannot list images");
	if (json) {
		json_start(&j, stdout);
		json_object_begin(&j, NULL);
		json_string(&j, "id", text);
		json_images(&j, img, count);
		json_object_end(&j);
		json_finish(&j);
	} else {
		print_images(img, count);
	}
	free(img);
	return EXIT_OK;
}

/* ------------------------------------------------------------------ */

static const char list_help[] =
	"Usage:\n"
	" blksnap-storage list [options]\n"
	"\n"
	"List the snapshots, one per line, tab-separated:\n"
	"  ID  taken|created|gone  storage files (comma-separated, or -)\n"
	"'gone': the kernel no longer knows the snapshot (the module was\n"
	"reloaded), but its files are still recorded: 'destroy ID' forgets them.\n"
	"Backslash, tab, comma and control characters in a path are written\n"
	"as \\\\, \\t and \\xNN.\n"
	"\n"
	"Options:\n"
	"     --json  one JSON object (see blksnap-storage(8))\n"
	" -h, --help  display this help\n";

/*
 * A path in the tab-separated, comma-joined text list: backslash, tab,
 * comma and control characters as C escapes (\\, \t, \x2c, \xNN), so
 * that a script can split the line and read every path back.
 */
static void put_list_path(const char *path)
{
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", stdout);
		else if (*p == '\t')
			fputs("\\t", stdout);
		else if (*p == '\n')
			fputs("\\n", stdout);
		else if (*p == ',' || *p < 0x20 || *p == 0x7f)
			printf("\\x%02x", *p);
		else
			putchar(*p);
	}
}

/*
 * @ctl -1: a snapshot the kernel no longer knows, only recorded here.
 * A snapshot whose images or records cannot be read is not listed (a
 * script must not read "no storage" or "not taken" from it): one line on
 * stderr says why, and false is returned.
 */
static bool list_one(struct json *j, int ctl, const struct blk_snap_uuid *id)
{
	char text[BSC_UUID_LEN + 1];
	struct state_file *files = NULL;
	struct blk_snap_image_info *img = NULL;
	unsigned int count = 0;
	size_t nfiles = 0;
	bool taken = false;
	const char *state;
	int ret = 0;

	bsc_uuid_format(id, text);
	if (ctl >= 0)
		ret = snapshot_images(ctl, id, &img, &count, &taken);
	if (ret == -ENOENT)	/* destroyed since the list was taken */
		return true;
	if (ret) {
		report(text, "cannot read its images, not listed: %s",
		       strerror(-ret));
		return false;
	}
	state = ctl < 0 ? "gone" : taken ? "taken" : "created";
	ret = state_files(id, &files, &nfiles);
	if (ret) {
		state_report(ret);
		free(img);
		return false;
	}
	if (j) {
		json_object_begin(j, NULL);
		json_string(j, "id", text);
		json_string(j, "state", state);
		json_bool(j, "taken", taken);
		json_images(j, img, count);
		json_array_begin(j, "storage");
		for (size_t i = 0; i < nfiles; i++)
			json_string(j, NULL, files[i].path);
		json_array_end(j);
		json_object_end(j);
	} else {
		printf("%s\t%s\t", text, state);
		for (size_t i = 0; i < nfiles; i++) {
			fputs(i ? "," : "", stdout);
			put_list_path(files[i].path);
		}
		printf("%s\n", nfiles ? "" : "-");
	}
	state_free_files(files, nfiles);
	free(img);
	return true;
}

int cmd_list(int argc, char **argv)
{
	struct blk_snap_uuid *ids, *recorded;
	unsigned int count;
	size_t nrecorded;
	bool json = false, ok = true;
	struct json j;
	int ret, ctl;

	ret = parse_common(argc, argv, list_help, &json);
	if (ret >= 0)
		return ret;
	if (argc > optind)
		return usage_error("too many arguments");
	ctl = open_ctl();
	if (ctl < 0)
		return EXIT_RUNTIME;
	ret = bsc_snapshot_collect(ctl, &ids, &count);
	if (ret) {
		close(ctl);
		return fail("cannot list snapshots", ret);
	}
	if (json) {
		json_start(&j, stdout);
		json_object_begin(&j, NULL);
		json_array_begin(&j, "snapshots");
	}
	for (unsigned int i = 0; i < count; i++)
		ok &= list_one(json ? &j : NULL, ctl, &ids[i]);
	/*
	 * Records of snapshots the kernel no longer knows (the module was
	 * reloaded): their files stay recorded until 'destroy ID'.
	 */
	ret = state_ids(&recorded, &nrecorded);
	if (ret) {
		state_report(ret);
		ok = false;
	} else {
		for (size_t r = 0; r < nrecorded; r++) {
			bool known = false;

			for (unsigned int i = 0; i < count && !known; i++)
				known = !memcmp(&ids[i], &recorded[r],
						sizeof(ids[i]));
			if (!known)
				ok &= list_one(json ? &j : NULL, -1,
					       &recorded[r]);
		}
		free(recorded);
	}
	if (json) {
		json_array_end(&j);
		json_object_end(&j);
		json_finish(&j);
	}
	free(ids);
	close(ctl);
	return ok ? EXIT_OK : EXIT_RUNTIME;
}

/* ------------------------------------------------------------------ */

static const char version_help[] =
	"Usage:\n"
	" blksnap-storage version [options]\n"
	"\n"
	"Print the tool's and the loaded blksnap module's versions:\n"
	"  blksnap-storage 1.0\n"
	"  blksnap module MAJOR.MINOR.REVISION.BUILD\n"
	"(Use 'blksnap-storage --version' for the tool alone.)  Without the\n"
	"module the first line is still printed, then the error (exit 1).\n"
	"\n"
	"Options:\n"
	"     --json  one JSON object (see blksnap-storage(8))\n"
	" -h, --help  display this help\n";

int cmd_version(int argc, char **argv)
{
	struct blk_snap_version v;
	char text[64];
	bool json = false;
	struct json j;
	int ret, ctl;

	ret = parse_common(argc, argv, version_help, &json);
	if (ret >= 0)
		return ret;
	if (argc > optind)
		return usage_error("too many arguments");
	/* The tool's own version needs no module. */
	if (!json)
		printf("%s %s\n", PROGRAM_NAME, CLI_VERSION);
	fflush(stdout);
	ctl = open_ctl();
	if (ctl < 0)
		return EXIT_RUNTIME;
	ret = bsc_version(ctl, &v);
	close(ctl);
	if (ret)
		return fail(BLK_SNAP_CTL, ret);
	snprintf(text, sizeof(text), "%u.%u.%u.%u", v.major, v.minor,
		 v.revision, v.build);
	if (!json) {
		printf("blksnap module %s\n", text);
		return EXIT_OK;
	}
	json_start(&j, stdout);
	json_object_begin(&j, NULL);
	json_string(&j, "tool", CLI_VERSION);
	json_string(&j, "module", text);
	json_u64(&j, "major", v.major);
	json_u64(&j, "minor", v.minor);
	json_u64(&j, "revision", v.revision);
	json_u64(&j, "build", v.build);
	json_object_end(&j);
	json_finish(&j);
	return EXIT_OK;
}
