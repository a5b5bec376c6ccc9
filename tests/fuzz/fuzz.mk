# tests/fuzz/fuzz.mk - libFuzzer targets for every parser of untrusted input,
# included by the Makefile. `make fuzz` builds them with clang (ASan, UBSan,
# leak detection) into $(BUILD)/fuzz and runs each for FUZZ_SECONDS from its
# checked-in seeds (tests/fuzz/corpus/<target>/, read only); what the fuzzer
# adds goes to $(BUILD)/fuzz/corpus/<target>/, crashes to
# $(BUILD)/fuzz/artifacts/<target>/. It fails when any target finds a crash,
# a leak or undefined behaviour. `make fuzz FUZZ_TARGETS=url` runs one.
#
# The sources are compiled again with clang into $(BUILD)/fuzz/obj: the gcc
# objects of `make all` carry neither the fuzzer's coverage nor sanitizers.

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_TARGETS ?= mp_command json_command target cdp url addr socks mcp view_token delta find
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS   = -std=c11 $(WARN) -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link -MMD -MP -I. \
                $(shell $(PKG) --cflags $(LIBS_PKG) 2>/dev/null)
FUZZ_LDFLAGS := $(FUZZ_SAN) -fsanitize=fuzzer

# What each target links besides its own file. The request targets run the
# gateway's command checks, which live among the gateway's ops, so they take
# the whole server but main.c (nothing of it starts: no browser, no Redis).
FUZZ_APP_SRC := $(COMMON_SRC) $(WIRE_SRC) $(CDP_SRC) $(POOL_SRC) $(REGISTRY_SRC) $(SESSION_SRC) \
                $(TENANT_SRC) $(POLICY_SRC) $(EGRESS_SRC) $(MCP_SRC) $(GATEWAY_SRC)
FUZZ_SRC_mp_command   := tests/fuzz/fuzz_util.c tests/fuzz/fuzz_wire.c $(FUZZ_APP_SRC)
FUZZ_SRC_json_command := tests/fuzz/fuzz_util.c tests/fuzz/fuzz_wire.c $(FUZZ_APP_SRC)
FUZZ_SRC_target       := tests/fuzz/fuzz_util.c registry/target.c common/rg.c
FUZZ_SRC_cdp          := tests/fuzz/fuzz_util.c cdp/frame.c common/rg.c
FUZZ_SRC_url          := tests/fuzz/fuzz_util.c $(POLICY_SRC) common/rg.c
FUZZ_SRC_addr         := tests/fuzz/fuzz_util.c $(POLICY_SRC) common/rg.c
FUZZ_SRC_socks        := tests/fuzz/fuzz_util.c $(EGRESS_SRC) common/rg.c
FUZZ_SRC_mcp          := tests/fuzz/fuzz_util.c $(MCP_SRC) common/rg.c
FUZZ_SRC_view_token   := tests/fuzz/fuzz_util.c $(FUZZ_APP_SRC)
FUZZ_SRC_delta        := tests/fuzz/fuzz_util.c $(FUZZ_APP_SRC)
FUZZ_SRC_find         := tests/fuzz/fuzz_util.c registry/find.c registry/outline.c common/rg.c

fuzz_obj = $(patsubst %,$(FUZZ_DIR)/obj/%.o,$(basename $(1)))
FUZZ_BINS = $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_TARGETS))

.PHONY: fuzz-build

# Deps first (clang may be missing), then build in a sub-make, as `test` does.
fuzz: deps
	@$(MAKE) --no-print-directory fuzz-build
	@sh tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-build: $(FUZZ_BINS)

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_DIR)/obj/registry/observer_js.o: registry/observer_js.S $(BUILD)/registry/observer.js
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -Wa,-I$(BUILD) -c $< -o $@

define FUZZ_LINK
$(FUZZ_DIR)/fuzz_$(1): $(call fuzz_obj,tests/fuzz/fuzz_$(1).c $(sort $(FUZZ_SRC_$(1))))
	$$(FUZZ_CC) $$(FUZZ_LDFLAGS) -o $$@ $$^ $$(LDLIBS_ALL)
endef
$(foreach t,mp_command json_command target cdp url addr socks mcp view_token delta find,$(eval $(call FUZZ_LINK,$(t))))
