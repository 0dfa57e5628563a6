# Host unit tests: each unit/test_<unit>.c is one cmocka binary linked
# against libstoragefile.a; `make unit` runs them all and fails if any fails.
# Every variable here is UNIT_-prefixed.

UNIT_SRCS   := $(wildcard $(CURDIR)/unit/test_*.c)
UNIT_BINS   := $(patsubst $(CURDIR)/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRCS))
UNIT_LDLIBS := -lcmocka

# unit/kernel/test_<file>.c: one blksnap source file, <file>.c, built on
# the user-space kernel shim (unit/kernel/kshim.h) so that a test can play
# an order of completions the VM tests meet only by chance.
UNIT_KDIR      := $(CURDIR)/kernel/drivers/block/blksnap
UNIT_KSRCS     := $(wildcard $(CURDIR)/unit/kernel/test_*.c)
UNIT_KBINS     := $(patsubst $(CURDIR)/unit/kernel/%.c,$(BUILD)/unit/kernel/%,$(UNIT_KSRCS))
UNIT_KCPPFLAGS := -I$(CURDIR)/unit/kernel -I$(UNIT_KDIR) -DKBUILD_MODNAME='"blksnap"'
# The kernel builds without it (diff_io.c compares bio_add_page()'s int
# with an unsigned length); its sources are not changed for it.
UNIT_KCFLAGS    = $(CFLAGS) -Wno-sign-compare
# Every header a test may reach: one gcc call for several sources writes
# the dependencies of the last one only.
UNIT_KHDRS     := $(wildcard $(CURDIR)/unit/kernel/*.h $(CURDIR)/unit/kernel/linux/*.h $(UNIT_KDIR)/*.h)
UNIT_BINS      += $(UNIT_KBINS)

.PHONY: unit
unit: $(UNIT_BINS) ## run host unit tests (cmocka)
	@unit_failed=""; \
	for t in $(UNIT_BINS); do \
		echo "=== $$(basename $$t)"; \
		$$t || unit_failed="$$unit_failed $$(basename $$t)"; \
	done; \
	if [ -n "$$unit_failed" ]; then echo "FAILED:$$unit_failed"; exit 1; fi; \
	echo "all unit tests passed"

$(BUILD)/unit/%: $(CURDIR)/unit/%.c $(SF_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -o $@ $< $(SF_LIB) $(UNIT_LDLIBS)

$(BUILD)/unit/kernel/test_%: $(CURDIR)/unit/kernel/test_%.c $(CURDIR)/unit/kernel/kshim.c $(UNIT_KDIR)/%.c $(UNIT_KHDRS)
	@mkdir -p $(@D)
	$(CC) $(UNIT_KCPPFLAGS) $(UNIT_KCFLAGS) -o $@ $(filter %.c,$^) $(UNIT_LDLIBS)

-include $(UNIT_BINS:=.d)
