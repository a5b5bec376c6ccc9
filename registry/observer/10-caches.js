  /* ---- per-call caches --------------------------------------------------- */

  var styleCache = null; /* Map element -> CSSStyleDeclaration */
  var pseudoCache = null; /* Map element -> [before, after] text */
  var nthCache = null;    /* Map parent -> Map child -> ":nth-of-type(k)" or "" */
  var activeEl = null;
  var pseudoSel;          /* selector of elements that may have ::before/::after text, null: any */
  var pseudoMemo = { key: null, sel: null }; /* pseudoSel across calls, by sheetsKey */

  /*
   * Style sheets whose <link> failed to load (an offline page, a host that
   * does not answer, a URL the egress policy refused). Such a sheet holds no
   * rules, but reading them throws as a cross-origin sheet's do, and an
   * unreadable sheet makes every element a candidate for ::before/::after
   * text (mayHavePseudo) and every change one that may reach anything
   * (sheetRisk). The error event says which: the listener is added when the
   * observer is installed at the document's start; a sheet that failed
   * before that (an observer installed late) stays unknown, as before.
   */
  var failedSheets = new WeakSet();
  var NO_RULES = [];
  try {
    document.addEventListener('error', function (ev) {
      var t = ev.target;
      if (t && t.localName === 'link' && t.sheet) failedSheets.add(t.sheet);
    }, true);
  } catch (e) { /* no document to listen on: every unreadable sheet stays unknown */ }
  /* A sheet's rules: none for one that failed to load, null when they cannot be read. */
  function rulesOf(sheet) {
    if (failedSheets.has(sheet)) return NO_RULES;
    try { return sheet.cssRules; } catch (e) { return null; }
  }
  var sheetsNow = null;   /* sheetsKey(document) during an observe, else null */
  var pathCache = null;
  var labelIndex = null;  /* Map control -> [label] for the main document */
  var depRec = null;      /* {els, ids}: what the name being computed read beyond its element */

  /* el.labels builds a live list per element: one pass over the labels instead */
  var labelsShared = false; /* an observe that may keep the index for the next (inc.labels) */
  var labelAsks = 0;       /* labelsOf calls in this observe before the index is built */
  /* el.labels up to this many, then the index: each el.labels walks the
     whole document (0.55 ms on the 11,000-element controls page; 32 of them
     were 17.7 ms of a first observe there), the index costs about five */
  var LABEL_ASKS_MAX = 4;
  function labelsOf(el) {
    if (!styleCache || el.ownerDocument !== document || el.getRootNode() !== document) return el.labels;
    /* an incremental observe names a few elements: the index would cost more */
    if (labelIndex === null && labelsShared && inc.labels) labelIndex = inc.labels;
    if (labelIndex === null && ++labelAsks <= LABEL_ASKS_MAX) return el.labels;
    if (labelIndex === null) {
      labelIndex = new Map();
      var all = document.getElementsByTagName('label');
      for (var i = 0; i < all.length; i++) {
        var c = all[i].control;
        if (!c) continue;
        var l = labelIndex.get(c);
        if (l) l.push(all[i]); else labelIndex.set(c, [all[i]]);
      }
      if (labelsShared) inc.labels = labelIndex;
    }
    return labelIndex.get(el) || null;
  }

  /*
   * A dialog opened with showModal() makes the rest of its document inert,
   * and Chromium's accessibility tree leaves that rest out: so does observe
   * (the page as a screen reader user meets it, with the dialog to answer
   * first). The modal per document, for one call (modalOf); when several
   * are open, the one with the focus, else the last. aria-modal does not
   * count, as it does not for Chromium's tree. A modal dialog inside a
   * shadow root (web components' dialogs) is found by the focus, which
   * opening a modal puts in it (on the dialog itself when nothing in it
   * takes focus; on what its slot shows, maybe) and the inert rest cannot
   * take away; getElementsByTagName does not reach into shadow roots.
   */
  var modalMemo = null;
  function findModal(doc) {
    var f = doc.activeElement;
    while (f && f.shadowRoot && f.shadowRoot.activeElement) f = f.shadowRoot.activeElement;
    for (var n = f; n; n = parentEl(n)) /* the flat tree: the focus may be slotted */
      if (n.localName === 'dialog' && n.open && safeMatches(n, ':modal')) return n;
    /* the focus is in none (the page moved it to the body, say): the last open one */
    var ds = doc.getElementsByTagName('dialog'), last = null;
    for (var i = 0; i < ds.length; i++)
      if (ds[i].open && safeMatches(ds[i], ':modal')) last = ds[i];
    return last;
  }
  function modalOf(doc) {
    if (!modalMemo) return findModal(doc);
    var m = modalMemo.get(doc);
    if (m === undefined) {
      m = findModal(doc);
      modalMemo.set(doc, m);
    }
    return m;
  }
  /* el sits outside its document's modal dialog, neither in it nor above
     it in the flat tree (shadow trees, and what slots show, included):
     inert */
  function blockedByModal(el) {
    var m = modalOf(el.ownerDocument);
    if (m === null) return false;
    for (var n = el; n; n = parentEl(n)) if (n === m) return false;
    for (var a = parentEl(m); a; a = parentEl(a)) if (a === el) return false;
    return true;
  }

  function beginCall() {
    modalMemo = new Map();
    styleCache = new Map();
    pseudoCache = new Map();
    nthCache = new Map();
    activeEl = deepActive(document);
    pseudoSel = undefined;
    pathCache = new Map();
    labelIndex = null;
    labelAsks = 0;
    roleCache = new Map();
    reachMemo = null;
  }
  function endCall() {
    styleCache = pseudoCache = nthCache = roleCache = pathCache = labelIndex = modalMemo = null;
    labelsShared = false;
    activeEl = null;
  }
  function style(el) {
    var s = styleCache ? styleCache.get(el) : undefined;
    if (s === undefined) {
      var w = el.ownerDocument.defaultView || window;
      s = w.getComputedStyle(el);
      if (styleCache) styleCache.set(el, s);
    }
    return s;
  }

  /* the runs of white space that are not one space already: a string
     without any is returned as it is, not copied */
  var FOLD_RE = /[\t\n\r\f\u00a0][ \t\n\r\f\u00a0]*| [ \t\n\r\f\u00a0]+/g;
  function fold(s) {
    var r = s.replace(FOLD_RE, ' ');
    var a = 0, b = r.length;
    while (a < b && r.charCodeAt(a) === 32) a++;
    while (b > a && r.charCodeAt(b - 1) === 32) b--;
    return a === 0 && b === r.length ? r : r.slice(a, b);
  }
  function clip(s, n) {
    return s.length > n ? s.slice(0, n) : s;
  }
  /* A lookup table keyed by what a page chooses (a tag name, a type
     attribute): no prototype, so that an element named "constructor" or an
     input of type "__proto__" finds nothing in it, as any unknown key. */
  function table(keys) {
    var t = Object.create(null);
    for (var k in keys) t[k] = keys[k];
    return t;
  }
  function lower(el) {
    return el.localName || '';
  }
  function attr(el, n) {
    return el.getAttribute(n);
  }
  function hasAttr(el, n) {
    return el.hasAttribute(n);
  }

