/*
 * expect.h - checks the test programs share that fail the running cmocka
 * test (fail_msg) when what they expect is not there: a node of an
 * observation, a JSON reply through the gateway, a tenant made in Redis.
 * Test programs only (they link cmocka; the benchmarks do not).
 */
#ifndef RG_TEST_EXPECT_H
#define RG_TEST_EXPECT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "fixture.h"
#include "registry/registry.h"
#include "tenant/tenant.h"

/** The ref of the first node of o with this role and accessible name; fails showing o's outline. */
const char *expect_ref(const reg_observation *o, const char *role, const char *name);

/**
 * One request to 127.0.0.1:port (nginx or a worker) with the header lines
 * hdr ("Name: value\r\n"..., may be NULL) and body (NULL: none). The reply
 * must be a JSON map with Content-Type application/json; returns it (the
 * caller frees it) and its HTTP status in *status. Fails the test when the
 * request gets no answer or the answer is not that.
 */
cJSON *expect_json(int port, const char *method, const char *path, const char *hdr,
                   const char *body, int *status);

/** POST of a JSON body through the stack's nginx as tenant acme (who 0) or other (1); as
 * expect_json. */
cJSON *expect_post(const fx_stack *f, int who, const char *path, const char *body, int *status);
/** A command on session sid as acme that must answer 200 with ok:true; the reply (caller frees). */
cJSON *expect_ok(const fx_stack *f, const char *sid, const char *body);

/** o.k when it is a string, else "" (o may be NULL). */
const char *json_str(const cJSON *o, const char *k);
/** result.k of a reply map when it is a string, else "". */
const char *reply_str(const cJSON *reply, const char *k);
/** error.code of a reply map, or "". */
const char *reply_code(const cJSON *reply);

/**
 * Creates tenant t (its name and limits as set; t->id is the name) in the
 * Redis at redis_url and writes its header lines, "Authorization: Bearer
 * <key>\r\nContent-Type: application/json\r\n", into hdr. Fails the test
 * when the tenant cannot be made.
 */
void expect_tenant(const char *redis_url, const tenant *t, char *hdr, size_t len);

#endif
