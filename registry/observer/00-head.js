/*
 * observer.js - refgate's page-side observer. Evaluating this file installs
 * globalThis.__refgate (once per version) and evaluates to true.
 *
 * The source is registry/observer/*.js, one file per section, joined in the
 * order of their names at build time into BUILD/registry/observer.js, which
 * observer_js.S embeds. The first file opens the function the last one
 * closes: the parts are not scripts of their own.
 *
 *   __refgate.describe(selector) -> JSON {role, name, description} or "null"
 *   __refgate.observe(optsJson)  -> JSON {url, title, truncated, count, nodes}; it walks
 *                                   again only what changed since its last walk
 *                                   (50-observe.js); options viewport_only, max_elements,
 *                                   sel (selectors), b (bounds), text, scope; for tests,
 *                                   _full: a full walk that
 *                                   changes no state, _noage: no 30 s age limit,
 *                                   _nodes_max: a lower node cap
 *   __refgate.observe(optsJson, base) -> the same with the reply's id (rid), or, when
 *                                   base is the id of the page's last reply, a delta
 *                                   against it: {url, title, truncated, count, rid,
 *                                   base, ops} (deltaReply)
 *   __refgate.stats()            -> JSON {full, incr, same, reused, delta, warm, pseudo}:
 *                                   observes by kind; warm 1 once the idle warm-up ran
 *                                   (95-warm.js); pseudo, the ::before/::after styles read
 *   __refgate.last               -> the elements of the last observe, by "i"
 *
 * For actions (registry/act.c), every one returning a JSON string, never
 * throwing ({"error": "..."} for bad input); i is an index into last:
 *
 *   resolve(specJson)     {kind, value, name, substring} -> {matches: [i...], count};
 *                         a match not in last is appended to it (until the next observe)
 *   identity(i)           {connected, testid, id, aria, role, name, tag, prole, sib, nattr}
 *                         exactly as observe computes them for that element
 *   inspect(i)            observe's fields plus description, for any element
 *   actionable(i, opts)   Promise of {state: ok|detached|hidden|disabled|unstable|covered, ...}
 *   fill(i, value)        value is the string itself
 *   select(i, valuesJson) valuesJson: a JSON array of strings -> {selected: [values]}
 *   checked(i), read(i|-1, what), scroll(i|-1, optsJson), focus(i), waitCheck(specJson)
 *   captureState()        {fields: [{i, value|checked|selected|text}], focus: i|-1,
 *                         scroll: [{css, x, y}]}: what a reload loses (88-state.js)
 *   restoreState(json)    puts a captureState() back -> {restored, lost}
 *
 * "Visible" for locators and actions means what a person sees (display,
 * visibility, frames, a box with area); aria-hidden only hides from role:
 * and from observe, which follow the accessibility tree.
 *
 * Roles and names follow what Chromium's accessibility tree reports: the
 * HTML-AAM mapping in Chromium's vocabulary and accessible names after
 * AccName 1.2 as Blink implements it. No modules, no dependencies.
 */
(function () {
  'use strict';
  var VERSION = 8;
  var G = globalThis;
  if (G.__refgate && G.__refgate.version === VERSION) return true;

