/*
 * wire_int.h - private to wire/: what the decoders (decode.c) and the
 * encoders (encode.c) share.
 */
#ifndef WIRE_INT_H
#define WIRE_INT_H

#include "wire/wire.h"

#define WIRE_INT_EXACT_MAX 9007199254740992ULL /* 2^53: beyond it a double loses integers */

/** A WIRE_BIN string item for data (n bytes), built in scratch. NULL on ENOMEM. */
cJSON *wire_bin_item(rg_buf *scratch, const void *data, size_t n);

#endif
