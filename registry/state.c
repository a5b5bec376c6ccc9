/*
 * state.c - what a reload loses, keyed by ref so that it outlives the
 * page: the values typed and not submitted, the focused element and the
 * scrolled containers (registry/observer/88-state.js reads and writes
 * them). reg_state_capture turns the observer's page-side indexes into the
 * refs of the last observation; reg_state_restore, once an observation of
 * the reloaded page has re-bound those refs, turns them back into that
 * observation's indexes. A ref the new page does not have counts as lost.
 *
 * Threading: like reg_page, one thread at a time per page.
 */
#define _GNU_SOURCE
#include "registry/reg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE_TIMEOUT_MS 5000

/* The ref at page-side index i of the last observation, or NULL. */
static const char *ref_at(const reg_page *pg, const cJSON *i)
{
    if (!cJSON_IsNumber(i) || i->valuedouble < 0 || i->valuedouble >= (double)pg->n_prev)
        return NULL;
    return pg->prev_refs[(size_t)i->valuedouble];
}

int reg_state_capture(reg_page *pg, reg_page_handle h, char **out)
{
    *out = NULL;
    /* The page-side indexes are those of the last observation's document: in
       a document nobody observed yet (right after a navigation) no field has
       a ref to be kept by, so the page is not asked. Without a world to
       follow the documents, it is asked. */
    if (pg->obs_gen && h.world && reg_world_gen(h.world) + 1 != pg->obs_gen)
        return 0;
    cJSON *js = NULL;
    char err[256];
    int rc = reg_js(h, "g.captureState()", 0, STATE_TIMEOUT_MS, &js, err, sizeof err);
    if (rc < 0) {
        rg_log(RG_LOG_DEBUG, "registry", "state capture failed: %s", err);
        return rc;
    }
    /* Indexes become refs; a field whose element has no ref is not kept. */
    cJSON *fields = cJSON_GetObjectItemCaseSensitive(js, "fields");
    for (cJSON *f = fields ? fields->child : NULL, *next; f; f = next) {
        next = f->next;
        const char *ref = ref_at(pg, cJSON_GetObjectItemCaseSensitive(f, "i"));
        if (!ref) {
            cJSON_Delete(cJSON_DetachItemViaPointer(fields, f));
            continue;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(f, "i");
        cJSON_AddStringToObject(f, "ref", ref);
    }
    const char *focus = ref_at(pg, cJSON_GetObjectItemCaseSensitive(js, "focus"));
    cJSON_DeleteItemFromObjectCaseSensitive(js, "focus");
    if (focus)
        cJSON_AddStringToObject(js, "focus", focus);
    *out = cJSON_PrintUnformatted(js);
    cJSON_Delete(js);
    return *out ? 0 : RG_ENOMEM;
}

int reg_state_restore(reg_page *pg, reg_page_handle h, const char *state, int *restored,
                      int *lost)
{
    *restored = *lost = 0;
    cJSON *st = cJSON_Parse(state);
    if (!cJSON_IsObject(st)) {
        cJSON_Delete(st);
        return RG_EBADREQ;
    }
    /* Refs become the new page's indexes; one it does not have is lost here. */
    int gone = 0;
    cJSON *fields = cJSON_GetObjectItemCaseSensitive(st, "fields");
    for (cJSON *f = fields ? fields->child : NULL, *next; f; f = next) {
        next = f->next;
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(f, "ref");
        int i = reg_page_index(pg, cJSON_IsString(ref) ? ref->valuestring : NULL);
        if (i < 0) {
            gone++;
            cJSON_Delete(cJSON_DetachItemViaPointer(fields, f));
            continue;
        }
        cJSON_AddNumberToObject(f, "i", i);
    }
    const cJSON *focus = cJSON_GetObjectItemCaseSensitive(st, "focus");
    int fi = reg_page_index(pg, cJSON_IsString(focus) ? focus->valuestring : NULL);
    cJSON_DeleteItemFromObjectCaseSensitive(st, "focus");
    cJSON_AddNumberToObject(st, "focus", fi);
    char *json = cJSON_PrintUnformatted(st);
    cJSON_Delete(st);
    rg_buf call;
    rg_buf_init(&call);
    rg_buf_puts(&call, "g.restoreState(");
    if (json)
        rg_buf_json_str(&call, json, strlen(json));
    rg_buf_puts(&call, ")");
    free(json);
    cJSON *js = NULL;
    char err[256];
    int rc = !json || call.failed
                 ? RG_ENOMEM
                 : reg_js(h, call.data, 0, STATE_TIMEOUT_MS, &js, err, sizeof err);
    rg_buf_destroy(&call);
    if (rc < 0) {
        rg_log(RG_LOG_DEBUG, "registry", "state restore failed: %s", err);
        return rc;
    }
    *restored = jint(js, "restored", 0);
    *lost = jint(js, "lost", 0) + gone;
    cJSON_Delete(js);
    return 0;
}

int reg_state_edited(reg_page_handle h, int *edited)
{
    *edited = 0;
    cJSON *js = NULL;
    char err[256];
    int rc = reg_js(h, "g.editedFields()", 0, STATE_TIMEOUT_MS, &js, err, sizeof err);
    if (rc < 0) {
        rg_log(RG_LOG_DEBUG, "registry", "edited fields not counted: %s", err);
        return rc;
    }
    *edited = jint(js, "edited", 0);
    cJSON_Delete(js);
    return 0;
}
