  var api = {
    version: VERSION,
    describe: describe,
    observe: observe,
    last: [],
    role: function (el) { beginCall(); try { return roleOf(el); } finally { endCall(); } },
    name: function (el) { beginCall(); try { return nameOf(el); } finally { endCall(); } },
    resolve: guarded(resolve),
    identity: guarded(identity),
    inspect: guarded(inspect),
    actionable: actionableSafe,
    fill: guarded(fill),
    select: guarded(select),
    checked: guarded(checked),
    read: guarded(read),
    scroll: guarded(scroll),
    focus: guarded(focus),
    waitCheck: guarded(waitCheck),
    captureState: guarded(captureState),
    editedFields: guarded(editedFields),
    /* a frame element's key (50-observe.js, xkeyOf): called on the element itself */
    xkey: function (el) { return el && el.nodeType === 1 ? xkeyOf(el) : -1; },
    restoreState: guarded(restoreState),
    /* counters of the observer's walks: full, incremental, answered unchanged; warm: 1 once
       the idle warm-up ran (95-warm.js); pseudo: ::before/::after styles read for names */
    stats: function () { return JSON.stringify(inc.stats); }
  };
  Object.defineProperty(G, '__refgate', { value: api, configurable: true, writable: true, enumerable: false });
  warmWhenIdle();
  /* Where a top-level document ended its load, sent at its load event
     through the binding only this world has (registry/world.c), so that a
     navigation's reply needs no call into the page after the load. The
     listener is added when the document turns complete, which is just
     before the load event in the same task, so that it runs after the
     page's own load listeners (a title or URL one of them sets is in the
     report, as it was when the page was asked after the event). */
  /* A task later, a second report with what the session's checkpoint after
     the navigation keeps of the page (its origin, scroll and storage, as
     session/park.c's capture_js reads them), so that checkpoint needs no
     call into the page either. Not in the first: a document's first storage
     access asks the browser process, 2 to 3 ms the navigation's reply would
     wait for. It begins with "st", which world.c looks for: 1 when the
     storage is in it, 0 when it is too large for the report (REPORT_MAX,
     under registry/world.c's cap) and the checkpoint asks the page. */
  var REPORT_MAX = 60000;
  /* st as an object, or null once its keys and values pass REPORT_MAX
     characters: a large storage is not copied at every load for nothing */
  function dumpStorage(st) {
    /* no prototype: a "__proto__" item is an item like any other */
    var o = Object.create(null), size = 0;
    for (var i = 0; i < st.length; i++) {
      var k = st.key(i), v = st.getItem(k);
      size += k.length + v.length;
      if (size > REPORT_MAX) return null;
      o[k] = v;
    }
    return o;
  }
  function where(r) {
    var nav = performance.getEntriesByType('navigation')[0];
    r.u = location.href; r.t = document.title; r.s = (nav && nav.responseStatus) || 0;
    r.o = location.origin; r.x = Math.round(G.scrollX); r.y = Math.round(G.scrollY);
    return r;
  }
  function reportLoad() {
    try {
      var b = G.__refgateLoaded;
      if (typeof b !== 'function') return;
      b(JSON.stringify(where({})));
      setTimeout(reportStorage, 0);
    } catch (e) { /* no report: the navigation asks the page */ }
  }
  function reportStorage() {
    var b = G.__refgateLoaded;
    if (typeof b !== 'function') return;
    try {
      var r = where({ st: 1 }), big = false;
      try { r.ls = dumpStorage(G.localStorage); big = r.ls === null; } catch (e) { /* none, as capture_js */ }
      try { r.ss = dumpStorage(G.sessionStorage); big = big || r.ss === null; } catch (e) { /* none, as capture_js */ }
      var full = big ? '' : JSON.stringify(r);
      /* world.c counts bytes of UTF-8: up to 3 a character here */
      var fits = !big && (full.length * 3 <= REPORT_MAX ||
        (full.length <= REPORT_MAX && new TextEncoder().encode(full).length <= REPORT_MAX));
      b(fits ? full : JSON.stringify(where({ st: 0 })));
    } catch (e) {
      b('{"st":0}'); /* the checkpoint asks the page, without waiting for more */
    }
  }
  /* the top document's dirty-marking events, now (50-observe.js, listen) */
  try {
    if (G.top === G) listen(document, window);
  } catch (e) { /* the first observe adds them */ }
  try {
    if (G.top === G && document.readyState !== 'complete')
      document.addEventListener('readystatechange', function () {
        if (document.readyState === 'complete') G.addEventListener('load', reportLoad);
      });
  } catch (e) { /* no report: the navigation asks the page */ }
  return true;
})();
