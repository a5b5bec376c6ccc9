/*
 * reg_int.h - private to registry/: calling the page-side script and small
 * JSON accessors shared by registry.c (observe) and act.c (targets, actions).
 */
#ifndef REG_INT_H
#define REG_INT_H

#include "registry.h"

/**
 * Evaluates call in the page, where `g` is the installed page-side script
 * (registry/observer.js; installed first when the document does not have
 * it). call must evaluate to a JSON string (or, with await_promise, a
 * promise of one). On success *out is the parsed object (caller owns).
 * A reply {"error": "..."} is RG_EBADREQ with the message in err; DevTools
 * errors keep their code (RG_ETIMEOUT, RG_ECRASHED, ...); a page exception
 * or a malformed reply is RG_EINTERNAL.
 */
int reg_js(reg_page_handle h, const char *call, int await_promise, int timeout_ms, cJSON **out,
           char *err, size_t errlen);

const char *jstr(const cJSON *o, const char *k);
int jint(const cJSON *o, const char *k, int def);

#endif
