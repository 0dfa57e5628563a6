# blksnap: top-level build. Everything built goes under build/.
# `make help` lists the targets.

BUILD      ?= $(CURDIR)/build
CC         ?= cc
CFLAGS     ?= -O2 -g
CFLAGS     += -Wall -Wextra -std=gnu11 -D_GNU_SOURCE
CPPFLAGS   += -I$(CURDIR)/kernel/include/uapi -I$(CURDIR)/storagefile -I$(CURDIR)/cli

.PHONY: all help check
all: cli ## build the blksnap-storage command (the default)

include mk/userland.mk
-include mk/kernel.mk
-include mk/vmtest.mk
-include mk/standalone.mk
-include mk/demo.mk
-include mk/bench.mk
-include mk/deb.mk

check: ## unit, CLI, bench report and harness tests, the VM tests (all on Debian's kernel, the "# kernels: both" ones on the patched kernel too), timed against the 50-minute budget (DEBUG=1: all on the debug kernel)
	@scripts/check.sh $(if $(DEBUG),DEBUG=$(DEBUG))

help: ## list the targets
	@echo "Targets:"
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-zA-Z_-]+):.*## (.*)/\1\t\2/' | awk -F '\t' '{ printf "  %-19s %s\n", $$1, $$2 }'
