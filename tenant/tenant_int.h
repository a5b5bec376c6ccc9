/*
 * tenant_int.h - what tenant.c shares with cache.c inside the tenant module.
 * Nothing outside tenant/ includes this header.
 */
#ifndef TENANT_INT_H
#define TENANT_INT_H

#include "tenant/tenant.h"

/** Longest API key tenant_authenticate hashes; longer ones are refused unhashed. */
#define TENANT_KEY_INPUT_MAX 256

/**
 * The tenant id that the key with SHA-256 hex digest hash belongs to, into
 * tid (TENANT_NAME_MAX + 1 bytes). RG_ENOTFOUND when no such key exists (or
 * its stored owner is not a valid name), RG_EUNAVAIL.
 */
int tenant_key_owner(rg_redis *r, const char *hash, char tid[TENANT_NAME_MAX + 1]);

#endif
