# Host unit tests: each unit/test_<unit>.c is one cmocka binary linked
# against libstoragefile.a; `make unit` runs them all and fails if any fails.
# Every variable here is UNIT_-prefixed.

UNIT_SRCS   := $(wildcard $(CURDIR)/unit/test_*.c)
UNIT_BINS   := $(patsubst $(CURDIR)/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRCS))
UNIT_LDLIBS := -lcmocka

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

-include $(UNIT_BINS:=.d)
