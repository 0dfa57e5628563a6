// SPDX-License-Identifier: GPL-2.0
/* A tiny streaming JSON writer (see json.h). */
#include <inttypes.h>

#include "json.h"

void json_start(struct json *j, FILE *out)
{
	j->out = out;
	j->depth = 0;
	j->has_items[0] = false;
}

void json_finish(struct json *j)
{
	fputc('\n', j->out);
	fflush(j->out);
}

/* Length of the valid UTF-8 sequence at @p (RFC 3629), or 0. */
static int utf8_len(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xbf;
	int n;

	if (*p < 0x80)
		return 1;
	if (*p >= 0xc2 && *p <= 0xdf)
		n = 2;
	else if (*p >= 0xe0 && *p <= 0xef)
		n = 3;
	else if (*p >= 0xf0 && *p <= 0xf4)
		n = 4;
	else
		return 0;
	if (*p == 0xe0)
		lo = 0xa0;	/* overlong */
	else if (*p == 0xed)
		hi = 0x9f;	/* surrogates */
	else if (*p == 0xf0)
		lo = 0x90;	/* overlong */
	else if (*p == 0xf4)
		hi = 0x8f;	/* beyond U+10FFFF */
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

/*
 * A byte that is not valid UTF-8 (file names are bytes) is written as
 * \udcXX, the lone surrogate Python's "surrogateescape" uses: the output
 * stays valid UTF-8 and the original bytes can be recovered.
 */
static void put_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		int n = utf8_len(p);

		if (!n) {
			fprintf(out, "\\udc%02x", *p);
		} else if (n > 1) {
			fwrite(p, 1, n, out);
			p += n - 1;
		} else if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", out);
		else if (*p == '\t')
			fputs("\\t", out);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

/* The comma and "key": that go before any value. */
static void member(struct json *j, const char *key)
{
	if (j->has_items[j->depth])
		fputc(',', j->out);
	j->has_items[j->depth] = true;
	if (key) {
		put_string(j->out, key);
		fputc(':', j->out);
	}
}

static void open_level(struct json *j, const char *key, char bracket)
{
	member(j, key);
	fputc(bracket, j->out);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->has_items[j->depth] = false;
}

static void close_level(struct json *j, char bracket)
{
	fputc(bracket, j->out);
	if (j->depth > 0)
		j->depth--;
}

void json_object_begin(struct json *j, const char *key)
{
	open_level(j, key, '{');
}

void json_object_end(struct json *j)
{
	close_level(j, '}');
}

void json_array_begin(struct json *j, const char *key)
{
	open_level(j, key, '[');
}

void json_array_end(struct json *j)
{
	close_level(j, ']');
}

void json_string(struct json *j, const char *key, const char *value)
{
	member(j, key);
	put_string(j->out, value);
}

void json_u64(struct json *j, const char *key, uint64_t value)
{
	member(j, key);
	fprintf(j->out, "%" PRIu64, value);
}

void json_i64(struct json *j, const char *key, int64_t value)
{
	member(j, key);
	fprintf(j->out, "%" PRId64, value);
}

void json_bool(struct json *j, const char *key, bool value)
{
	member(j, key);
	fputs(value ? "true" : "false", j->out);
}
