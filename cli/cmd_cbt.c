// SPDX-License-Identifier: GPL-2.0
/* cbt: change block tracking - info, read, mark-dirty. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include "blksnap_ctl.h"
#include "cmds.h"
#include "common.h"
#include "devices.h"
#include "json.h"

#define CBT_READ_CHUNK	(1u << 20)	/* map bytes per ioctl */
#define SECTOR_SHIFT	9

static const char cbt_help[] =
	"Usage:\n"
	" blksnap-storage cbt info [--json]\n"
	" blksnap-storage cbt read [--raw] [--since K] [--generation UUID] DEVICE\n"
	" blksnap-storage cbt mark-dirty DEVICE START:COUNT...\n"
	"\n"
	"Change block tracking of the devices that have been in a snapshot.\n"
	"\n"
	"info        one line per tracked device:\n"
	"            NAME MAJ:MIN block_size=B blocks=N capacity=BYTES\n"
	"            generation=UUID snap_number=S\n"
	"read        the blocks changed since the previous take, as sector\n"
	"            ranges 'MAJ:MIN START COUNT', one per line (only while a\n"
	"            snapshot of DEVICE is taken).  Each map byte is the snap\n"
	"            number the block last changed in.\n"
	"  --since K         blocks changed after snapshot K of the generation\n"
	"                    (default: snap_number - 1)\n"
	"  --generation UUID fail (exit 1) unless the generation is UUID: a\n"
	"                    new generation means a full backup is needed\n"
	"  --raw             write the raw map (one byte per block) instead\n"
	"mark-dirty  mark sector ranges START:COUNT changed; DEVICE may be the\n"
	"            original or its snapshot image\n"
	"\n"
	"Options:\n"
	"     --json  (info) one JSON object (see blksnap-storage(8))\n"
	" -h, --help  display this help\n";

enum { OPT_JSON = 256, OPT_RAW, OPT_SINCE, OPT_GENERATION };

static const struct option cbt_options[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "raw", no_argument, NULL, OPT_RAW },
	{ "since", required_argument, NULL, OPT_SINCE },
	{ "generation", required_argument, NULL, OPT_GENERATION },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct cbt_args {
	bool json, raw, has_since, has_generation;
	uint64_t since;
	struct blk_snap_uuid generation;
};

/* Options of all subcommands; which apply is checked by each. */
static int parse(int argc, char **argv, struct cbt_args *a)
{
	int c;

	optind = 0;
	while ((c = next_option(argc, argv, ":h", cbt_options)) != -1) {
		switch (c) {
		case 'h':
			return show_help(cbt_help);
		case OPT_JSON:
			a->json = true;
			break;
		case OPT_RAW:
			a->raw = true;
			break;
		case OPT_SINCE:
			if (!parse_u64(optarg, &a->since) || a->since > 255)
				return usage_error("--since: invalid snap number "
						   "'%s' (0-255)", optarg);
			a->has_since = true;
			break;
		case OPT_GENERATION:
			if (bsc_uuid_parse(optarg, &a->generation))
				return usage_error("--generation: invalid UUID '%s'",
						   optarg);
			a->has_generation = true;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	return -1;
}

static void info_text(const struct blk_snap_cbt_info *c)
{
	char name[288], num[32], gen[BSC_UUID_LEN + 1];

	device_name(bsc_dev_t(c->dev_id), name, sizeof(name));
	device_number(bsc_dev_t(c->dev_id), num, sizeof(num));
	bsc_uuid_format(&c->generation_id, gen);
	printf("%s %s block_size=%u blocks=%u capacity=%llu generation=%s "
	       "snap_number=%u\n", name, num, c->blk_size, c->blk_count,
	       (unsigned long long)c->device_capacity, gen, c->snap_number);
}

static void info_json(struct json *j, const struct blk_snap_cbt_info *c)
{
	char text[288];

	json_object_begin(j, NULL);
	device_name(bsc_dev_t(c->dev_id), text, sizeof(text));
	json_string(j, "device", text);
	device_number(bsc_dev_t(c->dev_id), text, sizeof(text));
	json_string(j, "device_dev", text);
	json_u64(j, "block_size", c->blk_size);
	json_u64(j, "blocks", c->blk_count);
	json_u64(j, "capacity", c->device_capacity);
	bsc_uuid_format(&c->generation_id, text);
	json_string(j, "generation", text);
	json_u64(j, "snap_number", c->snap_number);
	json_object_end(j);
}

static int cbt_info(int ctl, const struct cbt_args *a)
{
	struct blk_snap_cbt_info *info;
	unsigned int count;
	struct json j;
	int ret = bsc_tracker_collect(ctl, &info, &count);

	if (ret)
		return fail("cannot list tracked devices", ret);
	if (a->json) {
		json_start(&j, stdout);
		json_object_begin(&j, NULL);
		json_array_begin(&j, "devices");
	}
	for (unsigned int i = 0; i < count; i++) {
		if (a->json)
			info_json(&j, &info[i]);
		else
			info_text(&info[i]);
	}
	if (a->json) {
		json_array_end(&j);
		json_object_end(&j);
		json_finish(&j);
	}
	free(info);
	return EXIT_OK;
}

/* The tracking info of @dev; reports and returns false if untracked. */
static bool find_tracker(int ctl, const char *arg, dev_t dev,
			 struct blk_snap_cbt_info *out)
{
	struct blk_snap_cbt_info *info;
	unsigned int count;
	bool found = false;
	int ret = bsc_tracker_collect(ctl, &info, &count);

	if (ret) {
		fail("cannot list tracked devices", ret);
		return false;
	}
	for (unsigned int i = 0; i < count && !found; i++)
		if (bsc_dev_t(info[i].dev_id) == dev) {
			*out = info[i];
			found = true;
		}
	free(info);
	if (!found)
		report(arg, "not tracked (it has not been in a snapshot since "
		       "the module was loaded)");
	return found;
}

static int read_map(int ctl, const char *arg, dev_t dev, uint8_t *map,
		    uint32_t length)
{
	for (uint32_t off = 0; off < length; off += CBT_READ_CHUNK) {
		uint32_t n = length - off < CBT_READ_CHUNK ? length - off
							   : CBT_READ_CHUNK;
		int ret = bsc_read_cbt_map(ctl, dev, off, n, map + off);

		if (ret) {
			report(arg, "cannot read the CBT map: %s (it is readable "
			       "only while a snapshot of the device is taken)",
			       strerror(-ret));
			return EXIT_RUNTIME;
		}
	}
	return EXIT_OK;
}

/* Changed blocks as merged sector ranges, the last one cut at capacity. */
static void print_changed(dev_t dev, const struct blk_snap_cbt_info *c,
			  const uint8_t *map, uint64_t since)
{
	uint64_t per_block = c->blk_size >> SECTOR_SHIFT;
	uint64_t capacity = c->device_capacity >> SECTOR_SHIFT;

	for (uint32_t i = 0; i < c->blk_count; i++) {
		uint64_t start, end;
		uint32_t k = i;

		if (map[i] <= since)
			continue;
		while (k + 1 < c->blk_count && map[k + 1] > since)
			k++;
		start = i * per_block;
		end = (uint64_t)(k + 1) * per_block;
		if (capacity && end > capacity)
			end = capacity;
		if (end > start)
			printf("%u:%u %" PRIu64 " %" PRIu64 "\n", major(dev),
			       minor(dev), start, end - start);
		i = k;
	}
}

static int cbt_read(int ctl, const char *arg, const struct cbt_args *a)
{
	char text[BSC_UUID_LEN + 1];
	struct blk_snap_cbt_info c;
	const char *cause;
	uint8_t *map;
	dev_t dev;
	int ret = device_resolve(arg, &dev, &cause);

	if (ret) {
		report(arg, "%s", cause ? cause : strerror(-ret));
		return EXIT_RUNTIME;
	}
	if (!find_tracker(ctl, arg, dev, &c))
		return EXIT_RUNTIME;
	if (a->has_generation &&
	    memcmp(&a->generation, &c.generation_id, sizeof(c.generation_id))) {
		bsc_uuid_format(&c.generation_id, text);
		report(arg, "CBT generation is now %s: changes since the "
		       "given one are unknown, a full backup is needed", text);
		return EXIT_RUNTIME;
	}
	map = malloc(c.blk_count ? c.blk_count : 1);
	if (!map)
		return fail(arg, -ENOMEM);
	ret = read_map(ctl, arg, dev, map, c.blk_count);
	if (!ret && a->raw)
		fwrite(map, 1, c.blk_count, stdout);
	else if (!ret)
		print_changed(dev, &c, map, a->has_since ? a->since :
			      c.snap_number ? c.snap_number - 1u : 0);
	free(map);
	return ret;
}

/* "START:COUNT" in sectors, COUNT > 0. */
static bool parse_range(const char *text, struct blk_snap_block_range *r)
{
	char copy[64], *colon;
	uint64_t start, count;

	if (snprintf(copy, sizeof(copy), "%s", text) >= (int)sizeof(copy))
		return false;
	colon = strchr(copy, ':');
	if (!colon)
		return false;
	*colon = '\0';
	if (!parse_u64(copy, &start) || !parse_u64(colon + 1, &count) ||
	    !count || start + count < start)
		return false;
	r->sector_offset = start;
	r->sector_count = count;
	return true;
}

static int cbt_mark_dirty(int ctl, int argc, char **argv)
{
	struct blk_snap_block_range *ranges;
	const char *cause;
	dev_t dev;
	int ret = device_resolve(argv[0], &dev, &cause);

	if (ret) {
		report(argv[0], "%s", cause ? cause : strerror(-ret));
		return EXIT_RUNTIME;
	}
	ranges = calloc((size_t)argc, sizeof(*ranges));
	if (!ranges)
		return fail(NULL, -ENOMEM);
	for (int i = 1; i < argc; i++)
		(void)parse_range(argv[i], &ranges[i - 1]);
	ret = bsc_mark_dirty(ctl, dev, ranges, (size_t)argc - 1);
	free(ranges);
	if (ret == -ENODEV || ret == -ENXIO || ret == -ENOENT)
		report(argv[0], "not tracked and not a snapshot image");
	else if (ret)
		fail(argv[0], ret);
	return ret ? EXIT_RUNTIME : EXIT_OK;
}

/* Arguments are checked before /dev/blksnap is opened: usage errors win. */
static int check_args(const char *sub, int nargs, char **args,
		      const struct cbt_args *a)
{
	struct blk_snap_block_range r;

	if (!strcmp(sub, "info")) {
		if (a->raw || a->has_since || a->has_generation)
			return usage_error("info takes only --json");
		return nargs ? usage_error("too many arguments") : -1;
	}
	if (a->json)
		return usage_error("--json applies to 'cbt info' only");
	if (!strcmp(sub, "read")) {
		if (nargs != 1)
			return usage_error(nargs ? "too many arguments"
						 : "DEVICE expected");
		return -1;
	}
	if (a->raw || a->has_since || a->has_generation)
		return usage_error("mark-dirty takes no options");
	if (nargs < 2)
		return usage_error("DEVICE and at least one START:COUNT expected");
	for (int i = 1; i < nargs; i++)
		if (!parse_range(args[i], &r))
			return usage_error("invalid range '%s' (expected "
					   "START:COUNT in sectors)", args[i]);
	return -1;
}

int cmd_cbt(int argc, char **argv)
{
	static char name[32];
	const char *sub;
	struct cbt_args a = { 0 };
	int ret, ctl;

	ret = parse(argc, argv, &a);
	if (ret >= 0)
		return ret;
	if (optind >= argc)
		return usage_error("subcommand expected: info, read or mark-dirty");
	sub = argv[optind++];
	if (strcmp(sub, "info") && strcmp(sub, "read") && strcmp(sub, "mark-dirty"))
		return usage_error("unknown subcommand '%s'", sub);
	snprintf(name, sizeof(name), "cbt %s", sub);
	cmd_name = name;
	ret = check_args(sub, argc - optind, argv + optind, &a);
	if (ret >= 0)
		return ret;
	ctl = open_ctl();
	if (ctl < 0)
		return EXIT_RUNTIME;
	if (!strcmp(sub, "info"))
		ret = cbt_info(ctl, &a);
	else if (!strcmp(sub, "read"))
		ret = cbt_read(ctl, argv[optind], &a);
	else
		ret = cbt_mark_dirty(ctl, argc - optind, argv + optind);
	close(ctl);
	return ret;
}
