/*
 * wire.h - the protocol's codec: untrusted request bodies in msgpack or JSON
 * to cJSON trees, and reply trees back to msgpack or JSON. cJSON trees are the
 * one in-memory representation of commands and replies; binary data rides in
 * them as a base64 string item marked with WIRE_BIN.
 *
 * Decoding is strict so that what reaches the command code is plain data:
 * exactly one value per body, nesting at most WIRE_MAX_DEPTH, map keys are
 * unique strings, strings are UTF-8 without NUL bytes, numbers are finite
 * (and msgpack integers fit a double exactly). Any violation is RG_EBADREQ
 * with a sentence for a person in the caller's err buffer.
 *
 * Threading: every function may be called from any thread; nothing here keeps
 * state. (cJSON's parser writes a global error pointer as a side effect, which
 * nobody reads here.)
 *
 * Ownership: decoders hand the caller a tree it owns (cJSON_Delete); encoders
 * borrow the tree and append to the caller's buffer.
 */
#ifndef WIRE_H
#define WIRE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/rg.h"

/** Deepest nesting a request body may have: a scalar is depth 0, `{}` is 1. */
#define WIRE_MAX_DEPTH 16

/** Largest max_depth wire_mp_prescan accepts. */
#define WIRE_PRESCAN_DEPTH_CAP 64

/**
 * A bit in cJSON.type: the item is a string whose valuestring is the base64
 * (standard alphabet, padded) of binary data. cJSON itself ignores the bit:
 * cJSON_Delete frees the item like any string, cJSON_Print prints the base64
 * and cJSON_Compare treats it as a string.
 */
#define WIRE_BIN 0x1000

/**
 * A bit in cJSON.type: a number item that msgpack carries as float64 even
 * when its value is integral (a field the protocol calls a float, "ms").
 */
#define WIRE_FLOAT 0x2000

/**
 * Checks untrusted msgpack before msgpack_unpack_next sees it: msgpack-c has
 * no limits, and a 5-byte array header declaring 2^32 elements makes it
 * allocate gigabytes. Accepts exactly one object filling buf (len bytes, not
 * empty, nothing after it) in which every declared str/bin/ext length is at
 * most the bytes left after its header, every array count is at most the
 * bytes left (an element takes at least one byte), every map count is at most
 * half the bytes left, no byte is the reserved 0xc1, and containers nest at
 * most max_depth deep (a scalar at top level is depth 0; `{}` is depth 1).
 * Because it walks the whole object, the declared counts it accepts add up to
 * less than len, so unpacking afterwards costs memory in proportion to len.
 *
 * Returns 0, or RG_EBADREQ with a sentence in err (errlen bytes, always
 * NUL-terminated; err may be NULL). A max_depth outside
 * [0, WIRE_PRESCAN_DEPTH_CAP] is a caller bug: RG_EINTERNAL.
 */
int wire_mp_prescan(const void *buf, size_t len, int max_depth, char *err, size_t errlen);

/**
 * Decodes one untrusted msgpack body (len bytes) to a cJSON tree, after
 * wire_mp_prescan with WIRE_MAX_DEPTH. Mapping: nil -> null, bool -> bool,
 * integers -> number (magnitudes above 2^53 are refused: a double cannot hold
 * them exactly), float32/float64 -> number (NaN and infinities refused), str
 * -> string, bin -> WIRE_BIN string, array -> array, map -> object (keys must
 * be strings, each at most once). Strings and keys must be UTF-8 without NUL
 * bytes. ext is refused.
 *
 * Returns 0 with *out a tree the caller owns, or with *out NULL: RG_EBADREQ
 * with a sentence in err (as for wire_mp_prescan), or RG_ENOMEM.
 */
int wire_mp_decode(const void *buf, size_t len, cJSON **out, char *err, size_t errlen);

/**
 * Decodes one untrusted JSON body (len bytes, need not be NUL-terminated):
 * exactly one value with optional whitespace around it, nesting at most
 * WIRE_MAX_DEPTH, the whole body UTF-8, no NUL in it and no \u0000 in
 * strings, object keys unique, numbers finite. A body nested too deeply is
 * refused before cJSON parses it.
 *
 * Returns 0 with *out a tree the caller owns, or with *out NULL: RG_EBADREQ
 * with a sentence in err that gives the byte offset where it can, or
 * RG_ENOMEM.
 */
int wire_json_decode(const void *buf, size_t len, cJSON **out, char *err, size_t errlen);

/**
 * A binary value for a reply tree: a string item holding the base64 of data
 * (len bytes; data may be NULL when len is 0) with WIRE_BIN set. The caller
 * owns it (or adds it to a tree that then owns it). NULL when out of memory.
 */
cJSON *wire_bin_new(const void *data, size_t len);

/** 1 when v is a string item marked WIRE_BIN, else 0 (also for NULL). */
int wire_is_bin(const cJSON *v);

/** Adds key: d to obj as a WIRE_FLOAT number; the item, or NULL on ENOMEM. */
cJSON *wire_add_float(cJSON *obj, const char *key, double d);

/**
 * Appends the msgpack encoding of the reply tree v to out: null, bools,
 * numbers (a double with an integral value in [-2^53, 2^53] packs as the
 * smallest msgpack int, any other as float64: the same integers that
 * wire_mp_decode accepts, so that whatever is encoded decodes again to the
 * same tree), strings as str, WIRE_BIN
 * strings as bin (decoded from base64), arrays, and objects as maps with str
 * keys in the tree's order.
 *
 * Returns 0, RG_ENOMEM, or RG_EINTERNAL for a tree that is not plain data (a
 * raw or invalid item, a NULL string or key, a WIRE_BIN item that is not
 * base64, nesting deeper than 2,000). On failure out keeps what it had before
 * the call (its failed flag may be set).
 */
int wire_mp_encode(const cJSON *v, rg_buf *out);

/**
 * Appends v as compact JSON to out. WIRE_BIN strings print as their base64
 * string. Integral numbers in [-2^63, 2^63) print as integers (1700000000000,
 * never 1.7e+12), other numbers with the fewest of 15 or 17 significant
 * digits that read back to the same double, NaN and infinities as null.
 * Strings are escaped as rg_buf_json_str does.
 *
 * Returns 0, RG_ENOMEM, or RG_EINTERNAL as for wire_mp_encode; on failure
 * out keeps what it had before the call.
 */
int wire_json_encode(const cJSON *v, rg_buf *out);

#endif
