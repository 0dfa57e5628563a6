# storagefile: build $(BUILD)/libstoragefile.a from storagefile/*.c.
# Included by mk/userland.mk; every variable here is SF_-prefixed.

SF_SRCS := $(wildcard $(CURDIR)/storagefile/*.c)
SF_OBJS := $(patsubst $(CURDIR)/storagefile/%.c,$(BUILD)/obj/storagefile/%.o,$(SF_SRCS))
SF_LIB  := $(BUILD)/libstoragefile.a

.PHONY: storagefile
storagefile: $(SF_LIB) ## build libstoragefile.a

$(SF_LIB): $(SF_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

$(BUILD)/obj/storagefile/%.o: $(CURDIR)/storagefile/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

-include $(SF_OBJS:.o=.d)
