/*
 * route.c - which worker nginx sends a session id to, computed the way
 * scripts/nginx-conf.sh lays out nginx's routing: the id hashes
 * (MurmurHash2, as nginx's split_clients) to one of 200 equal buckets, and
 * each bucket belongs to the worker whose name scores highest for it
 * (rendezvous hashing over SHAKE-256 streams of "refgate-route|w<i>"). A
 * worker mints session ids that land on itself with it (session.c), so a
 * new session does not move on its first command.
 */
#include "session/sess_int.h"

#include <openssl/evp.h>
#include <string.h>

/* The generator's constants: change them together with scripts/nginx-conf.sh. */
#define ROUTE_BUCKETS 200
#define ROUTE_PART 50u /* 0.5% in nginx's hundredths of a percent */

/* MurmurHash2 as nginx computes it for split_clients (seed: the length). */
static uint32_t murmur2(const unsigned char *p, size_t len)
{
    const uint32_t m = 0x5bd1e995u;
    uint32_t h = (uint32_t)len;
    for (; len >= 4; p += 4, len -= 4) {
        uint32_t k =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    switch (len) {
    case 3:
        h ^= (uint32_t)p[2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)p[1] << 8;
        /* fall through */
    case 1:
        h ^= p[0];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

int sess_route_bucket(const char *key)
{
    uint32_t h = murmur2((const unsigned char *)key, strlen(key));
    /* split_clients: part i ends at (i + 1) * (50 * 0xffffffff / 10000); the
       last part is "*", the rest. */
    uint32_t part = (uint32_t)(ROUTE_PART * (uint64_t)0xffffffffu / 10000u);
    uint32_t b = h / part;
    return b < ROUTE_BUCKETS ? (int)b : ROUTE_BUCKETS - 1;
}

/* Worker w's score for bucket b: 4 bytes of its SHAKE-256 stream, big-endian. */
static int scores_of(int w, unsigned char out[ROUTE_BUCKETS * 4])
{
    char name[48];
    int n = snprintf(name, sizeof name, "refgate-route|w%d", w);
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    int ok = c && EVP_DigestInit_ex(c, EVP_shake256(), NULL) == 1 &&
             EVP_DigestUpdate(c, name, (size_t)n) == 1 &&
             EVP_DigestFinalXOF(c, out, ROUTE_BUCKETS * 4) == 1;
    EVP_MD_CTX_free(c);
    return ok ? 0 : -1;
}

int sess_route_owner(int bucket, int n)
{
    if (n <= 1 || bucket < 0 || bucket >= ROUTE_BUCKETS)
        return 0;
    int best = -1;
    uint32_t best_score = 0;
    for (int w = 1; w <= n; w++) {
        unsigned char s[ROUTE_BUCKETS * 4];
        if (scores_of(w, s) < 0)
            return 0;
        const unsigned char *p = s + 4 * bucket;
        uint32_t v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (best < 0 || v > best_score) { /* a tie keeps the lower number, as the generator */
            best = w - 1;
            best_score = v;
        }
    }
    return best;
}

int sess_id_worker(const char *sid, int n)
{
    return sess_route_owner(sess_route_bucket(sid), n);
}
