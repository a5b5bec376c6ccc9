/*
 * state.c - what a reload loses, keyed by ref so that it outlives the
 * page: the values typed and not submitted, the focused element and the
 * scrolled containers (registry/observer/88-state.js reads and writes
 * them). reg_state_capture turns the observer's page-side indexes into the
 * refs of the last observation; reg_state_restore, once an observation of
 * the reloaded page has re-bound those refs, turns them back into that
 * observation's indexes. A ref the new page does not have counts as lost.
 * The fields of frames of other sites are captured in each frame's world
 * and put back in the frame that holds their ref after the reload.
 *
 * Threading: like reg_page, one thread at a time per page.
 */
#define _GNU_SOURCE
#include "registry/reg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE_TIMEOUT_MS 5000

/* The ref at page-side index i (plus base) of the last observation, or NULL. */
static const char *ref_at(const reg_page *pg, const cJSON *i, int base)
{
    if (!cJSON_IsNumber(i) || i->valuedouble < 0 ||
        i->valuedouble + base >= (double)pg->n_prev)
        return NULL;
    return pg->prev_refs[(size_t)i->valuedouble + (size_t)base];
}

/*
 * The fields typed in the frames of other sites of the last observation,
 * each captured in its frame's world and kept by its ref, added to fields
 * (the page's). Their focus and scrolled boxes are not kept.
 */
static void capture_frames(reg_page *pg, reg_page_handle h, cJSON *fields)
{
    reg_xframe xs[REG_XFRAMES_MAX];
    int base[REG_XFRAMES_MAX], n[REG_XFRAMES_MAX];
    size_t nf = reg_frames_last(pg, h, xs, base, n, REG_XFRAMES_MAX);
    for (size_t k = 0; k < nf; k++) {
        cJSON *js = NULL;
        char err[256];
        if (reg_js(xs[k].h, "g.captureState()", 0, STATE_TIMEOUT_MS, &js, err, sizeof err) < 0) {
            rg_log(RG_LOG_DEBUG, "registry", "state capture in a frame failed: %s", err);
            continue;
        }
        cJSON *ff = cJSON_GetObjectItemCaseSensitive(js, "fields");
        for (cJSON *f = ff ? ff->child : NULL, *next; f; f = next) {
            next = f->next;
            const cJSON *i = cJSON_GetObjectItemCaseSensitive(f, "i");
            const char *ref = cJSON_IsNumber(i) && i->valuedouble < n[k] ? ref_at(pg, i, base[k])
                                                                          : NULL;
            if (!ref)
                continue;
            cJSON_DeleteItemFromObjectCaseSensitive(f, "i");
            cJSON_AddStringToObject(f, "ref", ref);
            cJSON_AddItemToArray(fields, cJSON_DetachItemViaPointer(ff, f));
        }
        cJSON_Delete(js);
    }
}

int reg_state_capture(reg_page *pg, reg_page_handle h, char **out)
{
    *out = NULL;
    /* The page-side indexes are those of the last observation's document: in
       a document nobody observed yet (right after a navigation, or a new
       session's first page, never observed at all) no field has a ref to be
       kept by, so the page is not asked. That call waited for the page's
       first frame: 150 to 185 ms of the checkpoint after session.create on
       the 5,000-control page, which held the first observe. Without a world
       to follow the documents, it is asked. */
    if (h.world && !reg_observed_here(pg, h))
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
        const char *ref = ref_at(pg, cJSON_GetObjectItemCaseSensitive(f, "i"), 0);
        if (!ref) {
            cJSON_Delete(cJSON_DetachItemViaPointer(fields, f));
            continue;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(f, "i");
        cJSON_AddStringToObject(f, "ref", ref);
    }
    if (fields)
        capture_frames(pg, h, fields);
    const char *focus = ref_at(pg, cJSON_GetObjectItemCaseSensitive(js, "focus"), 0);
    cJSON_DeleteItemFromObjectCaseSensitive(js, "focus");
    if (focus)
        cJSON_AddStringToObject(js, "focus", focus);
    *out = cJSON_PrintUnformatted(js);
    cJSON_Delete(js);
    return *out ? 0 : RG_ENOMEM;
}

/* Puts st (fields by index, focus, scrolls) back in the document of h; adds what it says. */
static int restore_in(reg_page_handle h, const cJSON *st, int *restored, int *lost)
{
    char *json = cJSON_PrintUnformatted(st);
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
    *restored += jint(js, "restored", 0);
    *lost += jint(js, "lost", 0);
    cJSON_Delete(js);
    return 0;
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
    /* Refs become the new page's indexes; one it does not have is lost here.
       One that is a frame's goes to that frame, by its own index. */
    reg_xframe xs[REG_XFRAMES_MAX];
    int base[REG_XFRAMES_MAX], n[REG_XFRAMES_MAX];
    size_t nf = reg_frames_last(pg, h, xs, base, n, REG_XFRAMES_MAX);
    cJSON *in_frame[REG_XFRAMES_MAX] = {0};
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
        size_t k = 0;
        while (k < nf && !(i >= base[k] && i < base[k] + n[k]))
            k++;
        if (k < nf) {
            if (!in_frame[k] && (in_frame[k] = cJSON_CreateObject())) {
                cJSON_AddItemToObject(in_frame[k], "fields", cJSON_CreateArray());
                cJSON_AddNumberToObject(in_frame[k], "focus", -1);
            }
            cJSON *to = cJSON_GetObjectItemCaseSensitive(in_frame[k], "fields");
            if (!to) {
                gone++;
                cJSON_Delete(cJSON_DetachItemViaPointer(fields, f));
                continue;
            }
            cJSON_AddItemToArray(to, cJSON_DetachItemViaPointer(fields, f));
            i -= base[k];
        }
        cJSON_AddNumberToObject(f, "i", i);
    }
    const cJSON *focus = cJSON_GetObjectItemCaseSensitive(st, "focus");
    int fi = reg_page_index(pg, cJSON_IsString(focus) ? focus->valuestring : NULL);
    cJSON_DeleteItemFromObjectCaseSensitive(st, "focus");
    cJSON_AddNumberToObject(st, "focus", fi);
    int rc = restore_in(h, st, restored, lost);
    cJSON_Delete(st);
    for (size_t k = 0; k < nf; k++) {
        /* a frame that does not answer loses its own fields, not the page's */
        if (in_frame[k] && (rc < 0 || restore_in(xs[k].h, in_frame[k], restored, lost) < 0))
            gone += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(in_frame[k], "fields"));
        cJSON_Delete(in_frame[k]);
    }
    *lost += gone;
    return rc;
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
