/*
 * fuzz_mp_command.c - libFuzzer target: an untrusted msgpack request body
 * through wire_mp_prescan and wire_mp_decode, then the gateway's command
 * checks (gw_check_command), as a POST or WebSocket frame would go.
 *
 * Properties beyond "no crash, leak or undefined behaviour":
 *   - the pre-scan agrees with msgpack-c: whatever it accepts (within
 *     msgpack-c's own 32-level stack) msgpack-c unpacks to exactly the body's
 *     length, and the depth it enforces is the object's real depth;
 *   - a refusal is bad_request with a UTF-8 sentence; the decoder refuses
 *     whatever the pre-scan refused;
 *   - a decoded tree keeps wire.h's promises and survives msgpack and JSON
 *     round trips (fuzz.h);
 *   - the command checks answer as docs/protocol.md says (fuzz.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <msgpack.h>

#include "common/rg.h"
#include "wire/wire.h"
#include "tests/fuzz/fuzz.h"

#define MSGPACK_STACK 32 /* containers msgpack-c's unpacker can hold open */

/* Nesting of o as wire.h counts it: a scalar is 0, {} is 1. */
static int object_depth(const msgpack_object *o)
{
    int d = 0;
    if (o->type == MSGPACK_OBJECT_ARRAY) {
        for (uint32_t i = 0; i < o->via.array.size; i++) {
            int k = object_depth(&o->via.array.ptr[i]);
            d = k > d ? k : d;
        }
        return d + 1;
    }
    if (o->type == MSGPACK_OBJECT_MAP) {
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            int k = object_depth(&o->via.map.ptr[i].key);
            d = k > d ? k : d;
            k = object_depth(&o->via.map.ptr[i].val);
            d = k > d ? k : d;
        }
        return d + 1;
    }
    return 0;
}

/* The pre-scan against msgpack-c on what both can read. */
static void prescan_vs_msgpack(const uint8_t *data, size_t size)
{
    if (wire_mp_prescan(data, size, MSGPACK_STACK, NULL, 0) != 0)
        return;
    msgpack_unpacked up;
    size_t off = 0;
    msgpack_unpacked_init(&up);
    msgpack_unpack_return ur = msgpack_unpack_next(&up, (const char *)data, size, &off);
    FZ_CHECK(ur == MSGPACK_UNPACK_SUCCESS && off == size,
             "the pre-scan accepted %zu bytes that msgpack-c unpacks as %d after %zu bytes", size,
             (int)ur, off);
    int d = object_depth(&up.data);
    FZ_CHECK(wire_mp_prescan(data, size, d, NULL, 0) == 0, "depth %d refused at max_depth %d", d,
             d);
    FZ_CHECK(d == 0 || wire_mp_prescan(data, size, d - 1, NULL, 0) == RG_EBADREQ,
             "depth %d accepted at max_depth %d", d, d - 1);
    msgpack_unpacked_destroy(&up);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "", pre_err[256] = "";
    cJSON *t = (cJSON *)1;

    int pre = wire_mp_prescan(data, size, WIRE_MAX_DEPTH, pre_err, sizeof pre_err);
    if (pre < 0)
        fz_check_refusal(pre, pre_err, "wire_mp_prescan");
    prescan_vs_msgpack(data, size);

    int rc = wire_mp_decode(data, size, &t, err, sizeof err);
    if (rc < 0) {
        fz_check_refusal(rc, err, "wire_mp_decode");
        FZ_CHECK(!t, "a refusal left a tree in *out");
        FZ_CHECK(pre == 0 || !strcmp(err, pre_err), "the decoder said \"%s\", the pre-scan \"%s\"",
                 err, pre_err);
        return 0;
    }
    FZ_CHECK(pre == 0, "wire_mp_decode accepted what wire_mp_prescan refused");
    FZ_CHECK(!err[0], "success with the message \"%s\"", err);
    fz_check_request_tree(t);
    fz_round_trips(t);
    fz_check_command(t);
    cJSON_Delete(t);
    return 0;
}
