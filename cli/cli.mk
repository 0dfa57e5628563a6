# cli: the blksnap-storage command.  Included by mk/userland.mk; every
# variable here is CLI_-prefixed.
#   make cli            -> $(BUILD)/blksnap-storage (static unless STATIC=0:
#                          it goes into a busybox initramfs)
#   make install        -> $(DESTDIR)$(PREFIX)/sbin, share/man/man8
#   make cli-test       -> host tests (no module needed)

STATIC     ?= 1
PREFIX     ?= /usr/local
CLI_SRCS   := $(wildcard $(CURDIR)/cli/*.c)
CLI_OBJS   := $(patsubst $(CURDIR)/cli/%.c,$(BUILD)/obj/cli/%.o,$(CLI_SRCS))
CLI_BIN    := $(BUILD)/blksnap-storage
CLI_MAN    := $(CURDIR)/cli/blksnap-storage.8
CLI_LIBS   := $(BUILD)/libstoragefile.a -pthread
CLI_LDFLAGS := $(if $(filter 1,$(STATIC)),-static)
# Relink when the link flags change (STATIC=0 <-> 1).
CLI_LINK_STAMP := $(BUILD)/obj/cli/link-flags

.PHONY: cli install cli-test cli-force
cli: $(CLI_BIN) ## build the blksnap-storage command

# Rewritten only when the flags differ, so its mtime says when they changed.
$(CLI_LINK_STAMP): cli-force
	@mkdir -p $(@D)
	@echo '$(CC) $(CLI_LDFLAGS) $(LDFLAGS)' | cmp -s - $@ || \
		echo '$(CC) $(CLI_LDFLAGS) $(LDFLAGS)' > $@

$(CLI_BIN): $(CLI_OBJS) $(BUILD)/libstoragefile.a $(CLI_LINK_STAMP)
	$(CC) $(CFLAGS) $(LDFLAGS) $(CLI_LDFLAGS) -o $@ $(CLI_OBJS) $(CLI_LIBS)

$(BUILD)/obj/cli/%.o: $(CURDIR)/cli/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

install: cli ## install blksnap-storage and its man page (PREFIX, DESTDIR)
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0755 $(CLI_BIN) $(DESTDIR)$(PREFIX)/sbin/blksnap-storage
	install -m 0644 $(CLI_MAN) $(DESTDIR)$(PREFIX)/share/man/man8/blksnap-storage.8

cli-test: cli ## host tests of the blksnap-storage command
	$(CURDIR)/cli/tests/host-cli.sh $(CLI_BIN)
	$(CURDIR)/cli/tests/host-ownership.sh $(CLI_BIN)

-include $(CLI_OBJS:.o=.d)
