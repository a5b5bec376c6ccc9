/*
 * fuzz.h - what the libFuzzer targets of tests/fuzz/ share: a property check
 * that aborts with a message (libFuzzer then keeps the input as a crash), an
 * independent UTF-8 validator, the contract of wire/wire.h checked on a
 * decoded tree, tree equality for round trips, and the gateway's command
 * checks run for several callers.
 *
 * fuzz_util.c holds what every target may link (no refgate code but
 * common/); fuzz_wire.c what needs the gateway (the request targets).
 * Each target is one process run by libFuzzer on one thread; nothing here
 * keeps state between inputs.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

/* A property of the code under test that must hold for every input. */
#define FZ_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "\nfuzz: %s:%d: property failed: %s\nfuzz: ", __FILE__, __LINE__,      \
                    #cond);                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/** 1 when s (n bytes) is UTF-8 without NUL bytes (RFC 3629), else 0. */
int fz_utf8_ok(const char *s, size_t n);

/**
 * Checks a tree a request decoder returned against wire.h: containers nest
 * at most WIRE_MAX_DEPTH deep, object keys are unique UTF-8 strings, strings
 * are UTF-8 without NUL (WIRE_BIN strings are padded base64), numbers are
 * finite, no other item types. Aborts on a violation.
 */
void fz_check_request_tree(const cJSON *v);

/**
 * 1 when a and b are the same data: same types (and the WIRE_BIN mark,
 * unless bin_as_str, for a trip through JSON that loses it), equal numbers,
 * equal strings, same keys in the same order.
 */
int fz_same_tree(const cJSON *a, const cJSON *b, int bin_as_str);

/**
 * The round trips every decoded request tree must survive: to msgpack and
 * back (same tree, and encoding the result again gives the same bytes), and
 * to JSON and back (same tree but for the WIRE_BIN mark). Aborts otherwise.
 */
void fz_round_trips(const cJSON *t);

/**
 * Runs gw_check_command on t for every kind of caller (HTTP and WebSocket,
 * with and without eval, with and without a session id) and checks what a
 * client would see: only bad_request or forbidden, a UTF-8 message, the
 * route rules of docs/protocol.md on success, and an error reply that encodes and
 * decodes again. Aborts otherwise.
 */
void fz_check_command(const cJSON *t);

/** Checks that a decoder's refusal is RG_EBADREQ with a UTF-8 sentence. */
void fz_check_refusal(int rc, const char *err, const char *what);

#endif
