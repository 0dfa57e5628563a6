// SPDX-License-Identifier: GPL-2.0
/* Parsing of human sizes ("4G", "512MiB", "4MB", "4096"), as util-linux. */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "storagefile.h"

/* Binary shift for a unit letter, or -1 if it is not one. */
static int unit_shift(char c)
{
	static const char units[] = "KMGTP";
	const char *p = strchr(units, toupper((unsigned char)c));

	if (!c || !p)
		return -1;
	return 10 * (int)(p - units + 1);
}

/*
 * Accept nothing, "B", or after a unit letter also "iB"; *decimal says a
 * unit letter was followed by a bare "B" ("KB": 1000, as util-linux).
 */
static bool suffix_ok(const char *rest, bool had_unit, bool *decimal)
{
	*decimal = false;
	if (!*rest)
		return true;
	if (had_unit && (rest[0] == 'i' || rest[0] == 'I'))
		rest++;
	else if (had_unit)
		*decimal = true;
	return (rest[0] == 'B' || rest[0] == 'b') && rest[1] == '\0';
}

int sf_parse_size(const char *s, uint64_t *bytes)
{
	uint64_t value = 0;
	const char *p = s;
	bool decimal;
	int shift = 0;

	if (!s || !bytes || !isdigit((unsigned char)*s))
		return -EINVAL;	/* empty, sign, space or junk first */

	for (; isdigit((unsigned char)*p); p++) {
		unsigned digit = (unsigned)(*p - '0');

		if (value > (UINT64_MAX - digit) / 10)
			return -ERANGE;
		value = value * 10 + digit;
	}

	if (*p && unit_shift(*p) >= 0)
		shift = unit_shift(*p++);
	if (!suffix_ok(p, shift > 0, &decimal))
		return -EINVAL;
	if (value == 0)
		return -EINVAL;
	if (decimal) {
		for (int i = 0; i < shift / 10; i++) {
			if (value > UINT64_MAX / 1000)
				return -ERANGE;
			value *= 1000;
		}
		*bytes = value;
		return 0;
	}
	if (shift && value > (UINT64_MAX >> shift))
		return -ERANGE;

	*bytes = value << shift;
	return 0;
}
