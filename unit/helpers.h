/* SPDX-License-Identifier: GPL-2.0 */
/* Small helpers shared by the cmocka unit tests (header-only). */
#ifndef UNIT_HELPERS_H
#define UNIT_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "storagefile.h"

/* A literal list of {offset, count} pairs, in sectors. */
struct pair {
	uint64_t off, cnt;
};

#define NPAIRS(a) (sizeof(a) / sizeof((a)[0]))

/* Build @rs from pairs that must already be sorted and non-overlapping. */
static inline void make_ranges(struct sf_ranges *rs, const struct pair *p,
			       size_t n)
{
	sf_ranges_init(rs);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(sf_ranges_append(rs, p[i].off, p[i].cnt), 0);
}

static inline void print_ranges(const char *what, const struct sf_ranges *rs)
{
	fprintf(stderr, "%s (%zu):", what, rs->count);
	for (size_t i = 0; i < rs->count && i < 20; i++)
		fprintf(stderr, " %llu+%llu",
			(unsigned long long)rs->r[i].sector_offset,
			(unsigned long long)rs->r[i].sector_count);
	fprintf(stderr, "\n");
}

/* Assert @rs is exactly @p (and that usable_sectors is their sum). */
static inline void expect_ranges(const struct sf_ranges *rs,
				 const struct pair *p, size_t n)
{
	uint64_t sum = 0;

	if (rs->count != n)
		print_ranges("got", rs);
	assert_int_equal(rs->count, n);
	for (size_t i = 0; i < n; i++) {
		if (rs->r[i].sector_offset != p[i].off ||
		    rs->r[i].sector_count != p[i].cnt)
			print_ranges("got", rs);
		assert_true(rs->r[i].sector_offset == p[i].off);
		assert_true(rs->r[i].sector_count == p[i].cnt);
		sum += p[i].cnt;
	}
	assert_true(rs->usable_sectors == sum);
}

/* Sorted, non-empty, non-touching: the invariant every producer keeps. */
static inline void expect_well_formed(const struct sf_ranges *rs)
{
	for (size_t i = 0; i < rs->count; i++) {
		assert_true(rs->r[i].sector_count > 0);
		if (i)
			assert_true(rs->r[i - 1].sector_offset +
				    rs->r[i - 1].sector_count <
				    rs->r[i].sector_offset);
	}
}

/* Deterministic pseudo-random numbers (tests must be reproducible). */
static inline uint64_t lcg_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

#endif /* UNIT_HELPERS_H */
