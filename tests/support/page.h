/*
 * page.h - DevTools and registry helpers shared by integration tests and
 * benchmarks.
 * Test code only.
 */
#ifndef RG_TEST_PAGE_H
#define RG_TEST_PAGE_H

#include <stddef.h>

#include "cdp/cdp.h"
#include "pool/pool.h"
#include "registry/registry.h"

/**
 * Runtime.evaluate (awaiting promises) on the page of session sid; the value
 * as text into out (may be NULL). RG_EINTERNAL when the page threw.
 */
int page_eval(cdp_conn *c, const char *sid, const char *expr, char *out, size_t len);
/** The browser's product string ("Chrome/156...") into out, "unknown" if it does not say. */
void page_browser_product(cdp_conn *c, char *out, size_t len);
/** Page.enable, Page.navigate to url, and waits for the load event (20 s). */
int page_navigate(cdp_conn *c, const char *sid, const char *url);
/**
 * Page.navigate to url (the Page domain enabled already) and a wait of up to
 * wait_ms for the load event: 0 once the navigation started, with the
 * wait's result in *load_rc (0: loaded; else the page stands as it is), or
 * the navigation's RG_E*.
 */
int page_goto(cdp_conn *c, const char *sid, const char *url, int wait_ms, int *load_rc);
/**
 * The registry's handle on the page of lease l, with refgate's isolated
 * world made as a session makes it (Runtime enabled first: its events
 * follow the world's context). 0; or -1 with h->world and *world NULL, and
 * then every registry call finds the world itself. Free *world with
 * reg_world_free after the page's last call.
 */
int page_handle(pool_lease *l, reg_page_handle *h, reg_world **world);

#endif
