# refgate - plain Makefile. Objects go under $(BUILD); every library comes
# from pkg-config. `make test` and `make run` install what is missing first
# (scripts/deps.sh), so a fresh Debian 12 machine needs nothing else.

BUILD    ?= build
CC       ?= cc
PKG      ?= pkg-config
LIBS_PKG := libcjson libxxhash hiredis msgpack libcrypto fcgi libwebsockets
TEST_PKG := cmocka

WARN     := -Wall -Wextra -Wshadow -Wformat=2 -Werror
CFLAGS   ?= -O2 -g
ALL_CFLAGS = -std=c11 $(WARN) $(CFLAGS) $(SANFLAGS) -MMD -MP -I. \
             $(shell $(PKG) --cflags $(LIBS_PKG) 2>/dev/null)
LDLIBS_ALL = $(shell $(PKG) --libs $(LIBS_PKG) 2>/dev/null) -lpthread
TEST_CFLAGS = $(shell $(PKG) --cflags $(TEST_PKG) 2>/dev/null)
TEST_LIBS   = $(shell $(PKG) --libs $(TEST_PKG) 2>/dev/null)

# Sanitizer build: `make asan` re-runs the tests with these in $(BUILD)/asan.
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

COMMON_SRC := common/rg.c common/redis.c
WIRE_SRC   := $(wildcard wire/*.c)
CDP_SRC    := cdp/cdp.c cdp/frame.c cdp/waiter.c
POOL_SRC   := pool/pool.c pool/spawn.c pool/memory.c
REGISTRY_SRC := $(wildcard registry/*.c) registry/observer_js.S
SESSION_SRC := $(wildcard session/*.c)
TENANT_SRC := $(wildcard tenant/*.c)
POLICY_SRC := $(wildcard policy/*.c)
EGRESS_SRC := $(wildcard egress/*.c)
MCP_SRC    := $(wildcard mcp/*.c)
# The gateway's pieces as a library (tests link them); main.c is the server.
GATEWAY_SRC := $(filter-out gateway/main.c,$(wildcard gateway/*.c))

obj = $(patsubst %.S,$(BUILD)/%.o,$(patsubst %.c,$(BUILD)/%.o,$(1)))

LIB_COMMON := $(BUILD)/libcommon.a
LIB_WIRE   := $(BUILD)/libwire.a
LIB_CDP    := $(BUILD)/libcdp.a
LIB_POOL   := $(BUILD)/libpool.a
LIB_REGISTRY := $(BUILD)/libregistry.a
LIB_SESSION := $(BUILD)/libsession.a
LIB_GATEWAY := $(BUILD)/libgateway.a
LIB_TENANT := $(BUILD)/libtenant.a
LIB_POLICY := $(BUILD)/libpolicy.a
LIB_EGRESS := $(BUILD)/libegress.a
LIB_MCP    := $(BUILD)/libmcp.a
# Link order follows the dependency arrows: gateway -> tenant, policy, session;
# session -> registry, pool, egress; pool -> cdp -> common; gateway and cli -> mcp
# -> common; gateway and cli -> wire -> common.
LIBS_REFGATE := $(LIB_GATEWAY) $(LIB_MCP) $(LIB_TENANT) $(LIB_POLICY) $(LIB_SESSION) \
                $(LIB_REGISTRY) $(LIB_POOL) $(LIB_EGRESS) $(LIB_CDP) $(LIB_WIRE) $(LIB_COMMON)
SERVER := $(BUILD)/refgate-server
CLI    := $(BUILD)/refgate-cli
CLI_SRC := $(wildcard cli/*.c)

# Every tests/unit/test_*.c and tests/integration/test_*.c is a test binary.
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
INTEG_TESTS := $(patsubst tests/integration/%.c,$(BUILD)/tests/%,$(wildcard tests/integration/test_*.c))
TEST_SUPPORT := tests/support/httpd.c tests/support/procs.c tests/support/page.c \
                tests/support/redis.c tests/support/net.c tests/support/stack.c \
                tests/support/stats.c tests/support/fixture.c tests/support/file.c \
                tests/support/cluster.c
# Checks that fail a cmocka test: linked into the test programs only.
TEST_EXPECT := tests/support/expect.c
LOAD_SRC := bench/load.c bench/load_drive.c bench/load_sample.c bench/load_verdict.c
BENCHES := $(BUILD)/bench/floor $(BUILD)/bench/observe $(BUILD)/bench/click $(BUILD)/bench/park $(BUILD)/bench/gateway \
           $(BUILD)/bench/load $(BUILD)/bench/loop $(BUILD)/bench/oversub $(BUILD)/bench/view \
           $(BUILD)/bench/capacity
# The benches that talk msgpack to a stack through nginx share its client.
BENCH_CLIENT := $(BUILD)/bench/client.o

.PHONY: all tests test unit integration asan bench soak soak-oversub run deps clean format \
        fmt-check fuzz
.DEFAULT_GOAL := all

all: $(LIBS_REFGATE) $(SERVER) $(CLI) $(UNIT_TESTS) $(INTEG_TESTS) $(BENCHES)

# The test binaries only, built and not run (a directory named tests would
# otherwise answer `make tests` with "nothing to be done").
tests: $(UNIT_TESTS) $(INTEG_TESTS)

deps:
	@sh scripts/deps.sh

# Deps first, then build: pkg-config must see the libraries before the
# compile flags are computed, so the build runs in a sub-make.
test: deps
	@$(MAKE) --no-print-directory all
	@sh tests/run.sh $(BUILD)/tests

unit: deps
	@$(MAKE) --no-print-directory $(UNIT_TESTS)
	@sh tests/run.sh $(BUILD)/tests $(notdir $(UNIT_TESTS))

asan: deps
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SANFLAGS="$(ASAN_FLAGS)" \
	    CFLAGS="-O1 -g" all
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    sh tests/run.sh $(BUILD)/asan/tests

# `make bench BENCH_ARGS=--quick` for a short smoke run. The benches' stacks run
# the server, and bench/loop times the CLI: both are built too.
bench: deps
	@$(MAKE) --no-print-directory $(BENCHES) $(SERVER) $(CLI)
	@sh bench/run.sh $(BUILD) $(BENCH_ARGS)

# `make soak SOAK_SECONDS=60` for a short one: bench/load on a stack of its
# own, PASS or FAIL (exit 1) on errors, RSS, fds and leftover Chromium
# (docs/soak.md). SOAK_ARGS="--trace soak.tsv" keeps every sample.
# `make soak-oversub` (or SOAK_CONTEXTS=N): oversubscribed, more sessions than
# live contexts, so that sessions are parked for room and restored all along;
# pool_exhausted then fails the run.
SOAK_SECONDS  ?= 600
SOAK_SESSIONS ?= 8
SOAK_CONTEXTS ?=
soak: deps
	@$(MAKE) --no-print-directory $(SERVER) $(BUILD)/bench/load
	@$(BUILD)/bench/load --sessions $(SOAK_SESSIONS) --duration $(SOAK_SECONDS) \
		$(if $(SOAK_CONTEXTS),--contexts $(SOAK_CONTEXTS)) $(SOAK_ARGS)

# 12 sessions on 2 workers of one browser with 2 contexts each: 4 live; each
# client thinks about a second before each command, as agents do (with none,
# every session is busy all the time and none can be parked for another).
soak-oversub:
	@$(MAKE) --no-print-directory soak SOAK_SESSIONS=12 SOAK_CONTEXTS=2 \
		SOAK_ARGS="--think-ms 1000 $(SOAK_ARGS)"

# The whole stack on this machine: Redis, REFGATE_WORKERS workers, nginx on
# 127.0.0.1:$${REFGATE_HTTP_PORT:-8080}; Ctrl-C stops everything it started.
run: deps
	@$(MAKE) --no-print-directory $(SERVER) $(CLI)
	@sh scripts/run.sh

clean:
	rm -rf $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

fmt-check:
	clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h')

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB_COMMON): $(call obj,$(COMMON_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
$(LIB_WIRE): $(call obj,$(WIRE_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
$(LIB_CDP): $(call obj,$(CDP_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
$(LIB_POOL): $(call obj,$(POOL_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
$(LIB_REGISTRY): $(call obj,$(REGISTRY_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
$(LIB_SESSION): $(call obj,$(SESSION_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
$(LIB_GATEWAY): $(call obj,$(GATEWAY_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
$(LIB_TENANT): $(call obj,$(TENANT_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
$(LIB_POLICY): $(call obj,$(POLICY_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
$(LIB_EGRESS): $(call obj,$(EGRESS_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^
$(LIB_MCP): $(call obj,$(MCP_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(SERVER): $(call obj,gateway/main.c) $(LIBS_REFGATE)
	$(CC) $(SANFLAGS) -o $@ $^ $(LDLIBS_ALL)
# refgate-cli is one process per command, as agents call it, so its start is on
# every command's path. Without PIE, and with the libraries Debian ships as
# archives linked in, the loader relocates nothing of libcrypto and the process
# touches about 75 pages instead of 210: `perf stat -r 300 refgate-cli --help`
# took 2.7-3.4 ms instead of 5.5-6.3 (/bin/true: 2.6), an observe about 4 ms
# less (docs/benchmarks.md, 6 December). With PIE the archives alone gave a
# third of that. The CLI's own image is not randomized then (its libraries
# are): a trade taken for a short-lived client. cJSON has no archive in Debian.
CLI_LDLIBS := -Wl,-Bstatic -lhiredis -lmsgpackc -lcrypto -Wl,-Bdynamic -lcjson -lpthread
$(CLI): $(call obj,$(CLI_SRC)) $(LIBS_REFGATE)
	$(CC) $(SANFLAGS) -no-pie -o $@ $^ $(CLI_LDLIBS)

# The observer's JavaScript: its sections joined in name order, then embedded
# with .incbin (found through the assembler's include path); rebuilt when a
# section changes.
OBSERVER_PARTS := $(sort $(wildcard registry/observer/*.js))
$(BUILD)/registry/observer.js: $(OBSERVER_PARTS)
	@mkdir -p $(dir $@)
	cat $(OBSERVER_PARTS) > $@.tmp && mv $@.tmp $@
$(BUILD)/registry/observer_js.o: registry/observer_js.S $(BUILD)/registry/observer.js
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) -Wa,-I$(BUILD) -c $< -o $@

$(BUILD)/tests/%.o: tests/unit/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_CFLAGS) -c $< -o $@
$(BUILD)/tests/%.o: tests/integration/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_CFLAGS) -c $< -o $@

$(BUILD)/tests/support/expect.o: tests/support/expect.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_CFLAGS) -c $< -o $@

$(BUILD)/tests/test_%: $(BUILD)/tests/test_%.o $(call obj,$(TEST_SUPPORT) $(TEST_EXPECT)) $(LIBS_REFGATE)
	$(CC) $(SANFLAGS) -o $@ $^ $(TEST_LIBS) $(LDLIBS_ALL)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(call obj,$(TEST_SUPPORT)) $(LIBS_REFGATE)
	$(CC) $(SANFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(LDLIBS_ALL) -lm
$(BUILD)/bench/gateway $(BUILD)/bench/loop $(BUILD)/bench/oversub $(BUILD)/bench/capacity: $(BENCH_CLIENT)
# The soak tool is several files (bench/load.h).
$(BUILD)/bench/load: $(call obj,$(LOAD_SRC)) $(call obj,$(TEST_SUPPORT)) $(LIBS_REFGATE)
	$(CC) $(SANFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(LDLIBS_ALL) -lm

include tests/fuzz/fuzz.mk

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
