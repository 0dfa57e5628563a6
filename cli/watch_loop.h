/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The event loop of `watch` and `snapshot`: wait in the kernel for the
 * snapshot's events, grow the storage on low free space, stop on
 * corruption, destruction or a request.
 */
#ifndef BLKSNAP_CLI_WATCH_LOOP_H
#define BLKSNAP_CLI_WATCH_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "storage.h"

/* The kernel wait is re-armed this often; events still wake it at once. */
#define WATCH_TIMEOUT_MS	60000u
/* Growth never leaves less free than min(5 % of the fs, 256 MiB). */
#define WATCH_MARGIN_PERCENT	5u
#define WATCH_MARGIN_MAX	(256ull << 20)

struct watch_opts {
	uint64_t step;	/* grow by at least this many bytes */
	uint64_t limit;	/* never make the file larger; 0: no limit */
	bool json;	/* one JSON object per line instead of text */
	FILE *log;	/* stdout for `watch`, stderr for `snapshot` */
};

/*
 * Watch until the snapshot is destroyed (EXIT_OK), corrupted
 * (EXIT_CORRUPTED), a stop is requested (EXIT_OK) or waiting fails
 * (EXIT_RUNTIME).  Growth failures are logged and watching goes on.
 */
int watch_loop(struct storage *s, const struct watch_opts *o);

/*
 * Async-signal-safe stop request, for signal handlers.  When it runs in the
 * watching thread it also breaks a kernel wait that is about to start.
 */
void watch_loop_interrupt(void);

#endif
