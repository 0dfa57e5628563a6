/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A tiny streaming JSON writer: compact, one document per line, so that
 * `watch --json` can emit one object per event and scripts can read lines.
 */
#ifndef BLKSNAP_CLI_JSON_H
#define BLKSNAP_CLI_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 8

struct json {
	FILE *out;
	int depth;
	bool has_items[JSON_MAX_DEPTH];	/* a comma is due at this depth */
};

void json_start(struct json *j, FILE *out);
/* Ends the document with a newline and flushes. */
void json_finish(struct json *j);

/* @key is the member name inside objects and NULL inside arrays. */
void json_object_begin(struct json *j, const char *key);
void json_object_end(struct json *j);
void json_array_begin(struct json *j, const char *key);
void json_array_end(struct json *j);

void json_string(struct json *j, const char *key, const char *value);
void json_u64(struct json *j, const char *key, uint64_t value);
void json_i64(struct json *j, const char *key, int64_t value);
void json_bool(struct json *j, const char *key, bool value);

#endif
