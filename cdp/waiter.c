/*
 * waiter.c - one-shot waits for a DevTools event (cdp.h: cdp_waiter_*),
 * built on the connection's public subscriptions: the event's callback runs
 * on the reader thread and wakes the waiting caller.
 */
#define _GNU_SOURCE
#include "cdp/cdp.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct cdp_waiter {
    cdp_conn *c;
    int sub;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int state; /* 0 waiting, 1 arrived, 2 connection closed */
    cJSON *params;
};

static void waiter_event(void *ud, const char *sid, const char *method, const cJSON *params)
{
    (void)sid;
    struct cdp_waiter *w = ud;
    pthread_mutex_lock(&w->mu);
    if (w->state == 0) {
        if (!method) {
            w->state = 2;
        } else {
            w->params = params ? cJSON_Duplicate(params, 1) : NULL;
            w->state = 1;
        }
        pthread_cond_broadcast(&w->cond);
    }
    pthread_mutex_unlock(&w->mu);
}

int cdp_waiter_new(cdp_conn *c, const char *session_id, const char *method, cdp_waiter **out)
{
    *out = NULL;
    cdp_waiter *w = calloc(1, sizeof *w);
    if (!w)
        return RG_ENOMEM;
    w->c = c;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    int id = cdp_subscribe(c, session_id, method, waiter_event, w);
    if (id < 0) {
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return id;
    }
    w->sub = id;
    *out = w;
    return 0;
}

int cdp_waiter_wait(cdp_waiter *w, int timeout_ms, const cJSON **params)
{
    struct timespec dl;
    rg_deadline(&dl, timeout_ms > 0 ? timeout_ms : CDP_DEFAULT_TIMEOUT_MS);
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    while (w->state == 0) {
        if (cdp_conn_err(w->c, NULL, 0)) {
            w->state = 2;
            break;
        }
        if (pthread_cond_timedwait(&w->cond, &w->mu, &dl) == ETIMEDOUT && w->state == 0) {
            rc = RG_ETIMEOUT;
            break;
        }
    }
    if (w->state == 1 && params)
        *params = w->params;
    int state = w->state;
    pthread_mutex_unlock(&w->mu);
    if (state == 2) {
        int err = cdp_conn_err(w->c, NULL, 0);
        return err ? err : RG_ECRASHED;
    }
    return rc;
}

void cdp_waiter_free(cdp_waiter *w)
{
    if (!w)
        return;
    cdp_unsubscribe(w->c, w->sub);
    cJSON_Delete(w->params);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
