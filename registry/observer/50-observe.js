  /* ---- observe ----------------------------------------------------------- */

  var INTERACTIVE = {
    button: 1, link: 1, textbox: 1, searchbox: 1, checkbox: 1, radio: 1, combobox: 1,
    listbox: 1, option: 1, menuitem: 1, menuitemcheckbox: 1, menuitemradio: 1, tab: 1,
    switch: 1, slider: 1, spinbutton: 1, treeitem: 1, DisclosureTriangle: 1,
    /* date, time and colour inputs, in Chromium's own role names */
    Date: 1, DateTime: 1, InputTime: 1, ColorWell: 1
  };
  var LANDMARK = {
    banner: 1, navigation: 1, main: 1, contentinfo: 1, complementary: 1, search: 1,
    dialog: 1, alertdialog: 1
  };
  var CONDITIONAL = { list: 1, listitem: 1, form: 1, region: 1, table: 1, menu: 1, menubar: 1,
    tablist: 1, tree: 1, radiogroup: 1, toolbar: 1, grid: 1, group: 0 };
  var QUIET_ROLE = { generic: 1, none: 1, presentation: 1 };
  /*
   * Roles that hold a page's text: in the full outline when something is
   * inside them (text or elements), so that an agent reads a paragraph, a
   * cell or an alert where it stands. Groups only when named (a fieldset by
   * its legend).
   */
  var TEXT_ROLES = { paragraph: 1, blockquote: 1, cell: 1, gridcell: 1, columnheader: 1,
    rowheader: 1, row: 1, alert: 1, status: 1, log: 1, timer: 1, marquee: 1, note: 1,
    term: 1, definition: 1, figure: 1, caption: 1, article: 1, group: 1, tooltip: 1,
    feed: 1, math: 1 };
  var NOT_SPACE = /[^ \t\n\r\f]/;
  var TEXT_MAX = 1000;          /* characters of one text line or colon text */
  var TEXT_TOTAL_MAX = 1000000; /* characters of text in one outline */
  var NODES_MAX = 100000;       /* outline lines of one observe, text included */
  var VALUE_ROLES = { textbox: 1, searchbox: 1, combobox: 1, slider: 1, spinbutton: 1 };
  var SKIP_TAGS = table({ script: 1, style: 1, template: 1, head: 1, meta: 1, link: 1, title: 1,
    noscript: 1, base: 1, datalist: 1, param: 1, source: 1, track: 1 });

  function statesOf(el, role) {
    var st = [];
    var tag = lower(el);
    var ac = attr(el, 'aria-checked');
    if ((tag === 'input' && (el.type === 'checkbox' || el.type === 'radio') && el.checked) || ac === 'true')
      st.push('checked');
    if (el.disabled || attr(el, 'aria-disabled') === 'true' ||
        (FORM_TAGS[tag] && safeMatches(el, ':disabled')))
      st.push('disabled');
    var ae = attr(el, 'aria-expanded');
    if (ae === 'true' || (role === 'DisclosureTriangle' && el.parentElement && el.parentElement.open))
      st.push('expanded');
    if (activeEl === el || (el.ownerDocument !== document && deepActive(el.ownerDocument) === el))
      st.push('focused');
    if ((tag === 'option' && el.selected) || attr(el, 'aria-selected') === 'true') st.push('selected');
    if (el.required || attr(el, 'aria-required') === 'true') st.push('required');
    if (((tag === 'input' || tag === 'textarea') && el.readOnly) || attr(el, 'aria-readonly') === 'true')
      st.push('readonly');
    return st;
  }
  var FORM_TAGS = table({ input: 1, button: 1, select: 1, textarea: 1, option: 1, optgroup: 1, fieldset: 1 });
  function safeMatches(el, s) {
    try { return el.matches(s); } catch (e) { return false; }
  }
  /*
   * The element that has focus, through open shadow roots. A field that
   * became disabled while it had focus stays the active element until a task
   * later, when Chromium moves focus to the body (HTML's focus fixup): it
   * counts as the body already, so an observe in between neither shows a
   * disabled field as focused nor differs from one a moment later.
   */
  function deepActive(doc) {
    var a = doc.activeElement;
    while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
    if (a && FORM_TAGS[lower(a)] && safeMatches(a, ':disabled')) return doc.body;
    return a;
  }

  function cssPath(el) {
    var c = pathCache ? pathCache.get(el) : undefined;
    if (c === undefined) {
      c = cssPathRaw(el);
      if (pathCache) pathCache.set(el, c);
    }
    return c;
  }
  function cssPathRaw(el) {
    var tag0 = lower(el);
    if (tag0 === 'html' || tag0 === 'body') return tag0;
    var p0 = el.parentElement;
    if (p0) return cssPath(p0) + ' > ' + CSS.escape(tag0) + nthOf(p0, el);
    var parts = [];
    for (var e = el; e && e.nodeType === 1; e = e.parentElement) {
      var tag = lower(e);
      if (tag === 'html') { parts.unshift('html'); break; }
      if (tag === 'body') { parts.unshift('body'); break; }
      var p = e.parentElement;
      var seg = CSS.escape(tag);
      if (p) {
        seg += nthOf(p, e);
      } else {
        var rn = e.parentNode;
        if (rn && rn.nodeType === 11) {
          parts.unshift(seg);
          if (rn.host) { var hp = cssPath(rn.host); return hp + ' ' + parts.join(' > '); }
          break;
        }
      }
      parts.unshift(seg);
    }
    return parts.join(' > ');
  }

  function nthOf(p, e) {
    var m = nthCache ? nthCache.get(p) : undefined;
    if (m === undefined) {
      m = new Map();
      var counts = new Map(), idx = new Map();
      for (var c = p.firstElementChild; c; c = c.nextElementSibling) {
        var k = (counts.get(c.localName) || 0) + 1;
        counts.set(c.localName, k);
        idx.set(c, k);
      }
      idx.forEach(function (k, c) {
        m.set(c, counts.get(c.localName) > 1 ? ':nth-of-type(' + k + ')' : '');
      });
      if (nthCache) nthCache.set(p, m);
    }
    var r = m.get(e);
    return r === undefined ? '' : r;
  }

  function quoteSel(s) {
    return '"' + s.replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';
  }

  function selectorsOf(el, role, name, testid, id, rootDoc) {
    var out = [];
    /* every selector is a target as it stands: CSS ones carry css: */
    if (testid) out.push('css:[data-testid=' + quoteSel(testid) + ']');
    if (name && !QUIET_ROLE[role]) out.push('role:' + role + '[name=' + quoteSel(name) + ']');
    if (id) out.push('css:#' + CSS.escape(id));
    if (name && name.length <= 60 && (role === 'link' || role === 'button' || role === 'tab' ||
        role === 'menuitem' || role === 'option' || role === 'DisclosureTriangle')) {
      var raw = el.textContent || '';
      if (raw.length < 400 && fold(raw) === name) out.push('text:' + name);
    }
    out.push('css:' + cssPath(el));
    return out;
  }

  function parseOpts(s) {
    var o = {};
    if (typeof s === 'string' && s) {
      try { o = JSON.parse(s) || {}; } catch (e) { o = {}; }
    } else if (s && typeof s === 'object') o = s;
    return o;
  }

  /* The sheets' shape is taken once per observe: the cache and the pseudo memo compare it. */
  /*
   * base: undefined for the plain reply; else the registry's caller speaks
   * deltas (null when it holds no earlier reply, or the "rid" of the one it
   * holds): see deltaReply.
   */
  function observe(optsJson, base) {
    sheetsNow = sheetsKey(document);
    try { return observeOnce(optsJson, base); } finally { sheetsNow = null; }
  }

  /*
   * A frame's key in this document: a number given the first time a walk
   * meets the frame element, kept on the element in this world (the page
   * never sees it) for the document's life. The worker finds which frame of
   * another site (a DevTools target of its own) sits in which frame element
   * by asking xkey of the element the browser names as its owner
   * (registry/frames.c), and puts that frame's outline under the line
   * whose "xk" it is.
   */
  var xkeys = new WeakMap(), xkeyNext = 0;
  function xkeyOf(el) {
    var k = xkeys.get(el);
    if (k === undefined) { k = xkeyNext++; xkeys.set(el, k); }
    return k;
  }

  /* An iframe's src as origin and path (at most 150 characters), or ''. */
  function frameSource(el) {
    try {
      var u = new URL(el.src);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') return '';
      return clip(u.origin + u.pathname, 150);
    } catch (e) {
      return '';
    }
  }

  function observeOnce(optsJson, base) {
    var opts = parseOpts(optsJson);
    /* _full: a full walk that changes no state, to compare with (tests) */
    var pure = !!opts._full;
    var plan = pure ? null : planObserve(optsJson, opts);
    if (plan && plan.same) {
      if (base === undefined || !inc.base) return plan.same;
      var kb = inc.base;
      if (base === kb.id) {
        inc.stats.delta++;
        return '{"same":true,' + kb.head + ',"rid":"' + kb.id + '","base":"' + kb.id +
          '","ops":[[0,' + kb.cores.length + ']]}';
      }
      return '{"same":true,"rid":"' + kb.id + '",' + plan.same.slice(13);
    }
    /* reuse: fragments of the last walk may stand in for clean subtrees;
       keep: this walk's fragments are kept for the next one */
    var reuse = !!(plan && !plan.full);
    var keep = !!plan && !opts.scope && !opts._prof;
    /* this observe's number, by which an entry's kept selectors are dated */
    var seq = ++inc.seq;
    var dirtyRoots = reuse ? plan.roots : null, onPath = reuse ? plan.path : null;
    var frags = inc.frags;
    /* the latest observe that saw the children of an element above the one
       walked change (kidsAt): a reused entry's selectors are current when
       they were made at or after it, its CSS path being the same */
    var curMax = 0;
    var fresh = !reuse;    /* inside a dirty root (or a full walk): nothing reused */
    var noStore = !keep;   /* inside a shadow tree, slot or frame: nothing kept */
    var sawNocache = false;
    /* the label index outlives this observe while no label can have changed */
    if (keep && !reuse) inc.labels = null;
    labelsShared = keep;
    var max = opts.max_elements > 0 ? opts.max_elements | 0 : Infinity;
    /* _nodes_max: a lower node cap, for tests (a page past NODES_MAX is large) */
    var nodesMax = opts._nodes_max > 0 ? Math.min(opts._nodes_max | 0, NODES_MAX) : NODES_MAX;
    var vpOnly = !!opts.viewport_only;
    /* b: false, the text outline's walk: no bounds for the refs (the
       registry and the elements list show them, the text outline does not;
       reading 5,000 of them is a third of an observe after a small change) */
    var wantB = opts.b !== false;
    /* text: false is the interactive outline's walk, which shows no text */
    var textOn = opts.text !== false;
    beginCall();
    /* a whole walk names every control: the label index from the first ask
       (each el.labels of the first few walked the whole document) */
    if (!reuse) labelAsks = LABEL_ASKS_MAX;
    var nodes = [], els = [], offs = [];
    var truncated = false, textCut = false;
    var nRefs = 0, textTotal = 0;
    var frameCounters = new Map();
    var W = window.innerWidth, H = window.innerHeight;

    /* Elements that may get a ref count against max; structure and text
       count against NODES_MAX only. */
    var stopped = false; /* NODES_MAX reached: the walk ends */
    function refable(el, ia) {
      return ia || attr(el, 'data-testid') !== null;
    }
    function push(el, role, depth, prole, sib, frame, ia, off, extra) {
      var rf = !(extra && extra.nr) && refable(el, ia);
      if ((rf && nRefs >= max) || nodes.length >= nodesMax) {
        truncated = true;
        if (nodes.length >= nodesMax) stopped = true;
        return -1;
      }
      if (rf) nRefs++;
      var n = { d: depth, role: role, el: el, prole: prole, sib: sib, frame: frame, ia: ia, off: off,
                rf: rf };
      if (extra) n.extra = extra;
      nodes.push(n);
      return nodes.length - 1;
    }

    /*
     * Text, as Chromium's StaticText exposes it: the text nodes of rendered,
     * visible elements, whitespace collapsed. Inline pieces join into one
     * pending line; a block boundary or an outline node ends the line, an
     * inline-block boundary is a space.
     */
    var pend = '', pendD = -1, pendEl = null;
    function addText(s, d, el) {
      if (pendD !== d) flushText();
      if (pend === '') {
        if (!NOT_SPACE.test(s)) return; /* leading white space */
        pendD = d;
        pendEl = el;
      }
      pend += s;
    }
    function softSpace() {
      if (pend !== '') pend += ' ';
    }
    function flushText() {
      if (pend !== '') {
        var t = fold(pend);
        if (t) {
          if (textTotal + t.length > TEXT_TOTAL_MAX || nodes.length >= nodesMax) textCut = true;
          else {
            textTotal += t.length;
            nodes.push({ d: pendD, text: clipText(t), el: pendEl });
          }
        }
      }
      pend = '';
      pendD = -1;
      pendEl = null;
    }

    /* walk the children of a box parent; counter maps tag -> count for sib.
       kids is a list, or a node whose child nodes are walked (sibling links
       are cheaper than a live NodeList's indexing). */
    function walkKids(parent, kids, depth, prole, frame, off, counter, hiddenVis) {
      if (kids.nodeType !== undefined) {
        for (var k = kids.firstChild; k !== null && !stopped; k = k.nextSibling)
          walkKid(parent, k, depth, prole, frame, off, counter, hiddenVis);
      } else {
        for (var i = 0; i < kids.length && !stopped; i++)
          walkKid(parent, kids[i], depth, prole, frame, off, counter, hiddenVis);
      }
    }

    function walkKid(parent, k, depth, prole, frame, off, counter, hiddenVis) {
      var t = k.nodeType;
      if (t === 3) {
        if (!textOn || hiddenVis || textCut || !parent) return;
        var data = k.data;
        /* white space between elements: at most a space, no style needed */
        if (!NOT_SPACE.test(data)) {
          if (pend !== '' && pendD === depth) softSpace();
          return;
        }
        addText(transformText(data, parent), depth, parent);
      } else if (t === 1) {
        walkEl(k, depth, prole, frame, off, counter, hiddenVis);
      }
    }

    /*
     * A fragment is what walkEl added for one element: its outline entries
     * (depths relative to the element's), the refs and text among them.
     * Kept only for an element whose walk starts and ends its own text (it
     * is in the outline or a block), or that added nothing at all; reused
     * for a clean element with the same inputs (parent role, hidden
     * parent, its index among its siblings) while the caps allow.
     */
    function walkEl(el, depth, prole, frame, off, counter, hiddenVis) {
      var tag = lower(el);
      if (SKIP_TAGS[tag]) return;
      if (!fresh && !noStore && !onPath.has(el)) {
        var fr = frags.get(el);
        if (fr !== undefined && fr.prole === prole && fr.hv === hiddenVis &&
            (fr.sib < 0 || (counter ? counter.get(tag) || 0 : 0) === fr.sib) &&
            (fr.cut ? truncated : fr.refs === 0 || nRefs + fr.refs <= max) && !textCut &&
            nodes.length + fr.ents.length < nodesMax && textTotal + fr.text <= TEXT_TOTAL_MAX) {
          replay(fr, depth, counter, tag);
          return;
        }
      }
      /* cut: walked with the ref cap already reached, so that every element
         in it that could have a ref has none; it is the same again while
         the cap is reached (a page past its cap is walked again only where
         it changed, like any other) */
      var mark0 = nodes.length, refs0 = nRefs, text0 = textTotal, cut = truncated;
      var saveFresh = fresh, saveNocache = sawNocache;
      if (!fresh && dirtyRoots.has(el)) fresh = true;
      sawNocache = false;
      var flushes = walkElRaw(el, tag, depth, prole, frame, off, counter, hiddenVis);
      /* self: false, nothing added; true, its own text; null, text shared
         with its neighbours (not kept, but its parent may be) */
      var self = flushes < 0 ? false : flushes === 2 ? true : null;
      var inside = sawNocache;
      if (keep) {
        if (self) { mark0 = lastMark; text0 = lastText; }
        if (!inside && !noStore && self !== null && (!truncated || cut) && !textCut && !stopped)
          frags.set(el, { prole: prole, hv: hiddenVis, sib: self ? lastSib : -1, counted: self !== false,
                          flush: self !== false, depth: depth, refs: nRefs - refs0, cut: cut,
                          text: textTotal - text0, ents: nodes.slice(mark0) });
        else
          frags.delete(el);
      }
      fresh = saveFresh;
      sawNocache = saveNocache || inside;
    }
    var lastSib = -1, lastMark = 0, lastText = 0;

    function replay(fr, depth, counter, tag) {
      if (counter && fr.counted) counter.set(tag, (counter.get(tag) || 0) + 1);
      if (fr.flush) flushText();
      var ents = fr.ents, dd = depth - fr.depth;
      for (var i = 0; i < ents.length; i++) {
        var e = ents[i];
        if (dd !== 0) {
          /* o: the entry the walk made, which the fragments of this
             element and of those inside it hold; what the output pass
             keeps on a copy goes to it too, or a name computed
             again because a source changed would come back stale at the
             next replay of one of those */
          var c = {};
          for (var k in e) c[k] = e[k];
          c.d = e.d + dd;
          c.o = e.o || e;
          e = c;
        }
        /* nothing inside the fragment changed since its entries were made
           (it would be on the path, and walked): only the elements above it
           can have moved it */
        e.cm = curMax;
        nodes.push(e);
      }
      nRefs += fr.refs;
      textTotal += fr.text;
      nReused++;
    }
    var nReused = 0;

    /* walkEl's work: -1 when el added nothing (not walked), 2 when it started
       and ended its own text, else 0 */
    function walkElRaw(el, tag, depth, prole, frame, off, counter, hiddenVis) {
      if (el.namespaceURI && el.namespaceURI !== 'http://www.w3.org/1999/xhtml' &&
          el.namespaceURI !== 'http://www.w3.org/2000/svg') return -1;
      var s = style(el);
      var disp = s.display;
      if (disp === 'none') return -1;
      if (attr(el, 'aria-hidden') === 'true') return -1;
      if (el.inert || blockedByModal(el)) return -1;
      var contents = disp === 'contents';
      var sib = 0;
      if (counter) {
        sib = counter.get(tag) || 0;
        counter.set(tag, sib + 1);
      }
      lastSib = -1;
      var vis = s.visibility;
      var invisible = vis === 'hidden' || vis === 'collapse';
      var role = invisible ? 'none' : roleOf(el);
      var ia = 0, include = false, cond = false;
      if (!invisible) {
        if (INTERACTIVE[role]) { include = true; ia = 1; }
        else if (role === 'heading' || LANDMARK[role]) include = true;
        else if (role === 'image') include = 'named';
        else if (CONDITIONAL[role] || (textOn && TEXT_ROLES[role])) { include = true; cond = true; }
        /* a frame of another site (its own process): its content is out of
           this world's reach; the line says where it is (Chromium's Iframe,
           named by its title), and the worker puts the frame's own outline
           under it (registry/frames.c), in both modes */
        else if (role === 'Iframe' && !frameDoc(el)) include = true;
        else if (!QUIET_ROLE[role] && isFocusable(el) && attr(el, 'tabindex') !== null &&
                 parseInt(attr(el, 'tabindex'), 10) >= 0 && role !== 'Iframe' && role !== 'SvgRoot') {
          include = true; ia = 1;
        }
        /* an editing root takes typing, and a draggable="true" element a
           drag: each gets a ref whatever its role (a plain <div> is
           generic, as in Chromium) */
        if (!ia && role !== 'Iframe' && (isEditRoot(el) || attr(el, 'draggable') === 'true')) {
          include = true; ia = 1; cond = false;
        }
      }
      /* Past the ref cap an element is listed without a ref (nr): an agent
         still reads it where it stands, and the registry stays capped. */
      var extra = null;
      if (include && nRefs >= max && refable(el, ia)) { extra = { nr: 1 }; ia = 0; truncated = true; }
      /* where the element's box starts and ends the text around it */
      var edge = 0; /* 0: inline, 1: a space (inline-block and the like), 2: a line break */
      if (textOn && !contents) {
        if (tag === 'br') edge = 1;
        else if (disp !== 'inline' && disp !== 'inline flow') edge = disp.lastIndexOf('inline', 0) === 0 ? 1 : 2;
      }
      if (include) flushText();
      else if (edge === 2) flushText();
      else if (edge === 1) softSpace();
      /* el's own part of the outline starts here */
      var mark1 = nodes.length, text1 = textTotal;
      var idx = -1, mark = nodes.length;
      if (include) {
        idx = push(el, role, depth, prole, sib, frame, ia, off, extra);
        if (idx < 0) return 0;
      }
      var childDepth = idx >= 0 ? depth + 1 : depth;
      var childProle = QUIET_ROLE[role] ? prole : role;
      if (role === 'combobox' && tag === 'select') childProle = 'MenuListPopup';

      if (tag === 'select') {
        /* options live in the select's popup or list, not in layout */
        var ctr = new Map();
        var listbox = role === 'listbox';
        var kids = el.querySelectorAll('option');
        for (var i = 0; i < kids.length && !stopped; i++) {
          var o = kids[i];
          if (style(o).display === 'none' && listbox) continue;
          if (o.hidden && !listbox) continue;
          var sb = ctr.get('option') || 0;
          ctr.set('option', sb + 1);
          var oi = push(o, 'option', childDepth, childProle, sb, frame, listbox ? 1 : 0, off, null);
          if (oi < 0) break;
        }
      } else if (tag === 'iframe' || tag === 'frame') {
        sawNocache = true;
        var doc = null;
        try { doc = el.contentDocument; } catch (e) { doc = null; }
        if (doc && doc.documentElement) {
          watch(doc, doc.defaultView);
          var n = frameCounters.get(frame) || 0;
          frameCounters.set(frame, n + 1);
          var fpath = frame === '' ? String(n) : frame + '.' + n;
          var r = el.getBoundingClientRect();
          var cs = style(el);
          var noff = [off[0] + r.left + (parseFloat(cs.borderLeftWidth) || 0) + (parseFloat(cs.paddingLeft) || 0),
                      off[1] + r.top + (parseFloat(cs.borderTopWidth) || 0) + (parseFloat(cs.paddingTop) || 0)];
          var body = doc.body || doc.documentElement;
          var ns0 = noStore;
          noStore = true;
          walkKids(body, body, childDepth, childProle, fpath, noff, new Map(), false);
          noStore = ns0;
        }
      } else if (tag === 'input' || tag === 'textarea' || tag === 'img') {
        /* no DOM content worth walking */
      } else {
        if (el.shadowRoot) watch(el.shadowRoot, null);
        var kids2 = el.shadowRoot ? el.shadowRoot :
          tag === 'slot' ? slotKids(el) : tag === 'details' && !el.open ? closedDetailsKids(el) :
          el;
        var sd = s.contentVisibility === 'hidden';
        /* shadow trees and slots: their mutations and styles are not
           followed closely enough to keep anything inside them */
        var ns1 = noStore;
        if (el.shadowRoot || tag === 'slot') { noStore = true; sawNocache = true; }
        var cm0 = curMax;
        if (reuse) {
          var ka = inc.kidsAt.get(el);
          if (ka > curMax) curMax = ka;
        }
        if (!sd) walkKids(el, kids2, childDepth, childProle, frame, off, contents ? counter : new Map(), invisible);
        curMax = cm0;
        noStore = ns1;
      }
      if (include) flushText();
      else if (edge === 2) flushText();
      else if (edge === 1) softSpace();
      if (idx >= 0 && cond && nodes.length === mark + 1 && !labelledByAuthor(el)) {
        /* structure without anything inside: drop it, unless the page named
           it (an empty column of a board, a list to drop things on) */
        nodes.pop();
      }
      if (include || edge === 2) {
        lastSib = idx >= 0 ? sib : -1;
        lastMark = mark1;
        lastText = text1;
        /* display: contents counts its children among its parent's, so
           their sibling indexes depend on what comes before it: not kept */
        return contents ? 0 : 2;
      }
      return 0;
    }

    function slotKids(slot) {
      /* the elements as walkKidsOf sees them, with the text between them */
      return slot.assignedElements().length ? slot.assignedNodes() : slot;
    }
    var prof = opts._prof ? [performance.now()] : null;
    var root = warmRoot || document.body || document.documentElement; /* warmRoot: 95-warm.js */
    var startEls;
    if (opts.scope) {
      var sc = null;
      try { sc = document.querySelector(opts.scope); } catch (e) { sc = null; }
      if (!sc) {
        endCall();
        return JSON.stringify({ error: 'scope', url: location.href, title: document.title });
      }
      startEls = [sc];
      walkKids(null, startEls, 0, proleOf(sc), '', [0, 0], null, false);
    } else if (root) {
      if (keep && !reuse) frags = inc.frags = new WeakMap();
      if (root.shadowRoot) noStore = true;
      if (reuse) {
        for (var ra = root; ra; ra = ra.parentElement) {
          var rka = inc.kidsAt.get(ra);
          if (rka > curMax) curMax = rka;
        }
      }
      walkKids(root, root.shadowRoot ? root.shadowRoot : root, 0, 'document', '', [0, 0], new Map(), false);
    }
    flushText();

    /* names and rects in separate passes: styles first, then layout once */
    var out = [], last = [];
    /* The index each element had in the previous observe: the registry keeps
       the ref of the same DOM node whatever else changed about it. */
    var prevIdx = new Map(), prevLast = pure ? inc.prevLast : api.last;
    for (var pi = 0; pi < prevLast.length; pi++) prevIdx.set(prevLast[pi], pi);
    /* A name kept on a reused entry stands unless its sources changed. */
    var nameDirty = reuse ? plan.names : null, allNames = !reuse || plan.allNames;
    if (keep && !reuse) { inc.srcOwners = new Map(); inc.idWatch = new Map(); }
    if (prof) prof.push(performance.now());
    var rects = new Array(nodes.length);
    /* Bounds are for the registry (elements with refs) and viewport_only. */
    for (var i = 0; i < nodes.length; i++) {
      if (!vpOnly && !(wantB && nodes[i].rf)) continue;
      rects[i] = nodes[i].el.getBoundingClientRect();
    }
    if (prof) prof.push(performance.now());
    var tn = 0, ts = 0, tsel = 0;
    for (var j = 0; j < nodes.length; j++) {
      var n = nodes[j];
      var e = n.el, rr = rects[j];
      var b;
      if (n.text !== undefined) {
        /* a text line: no ref, no identity; in the viewport with its element */
        if (vpOnly && (rr.right <= 0 || rr.bottom <= 0 || rr.left >= W || rr.top >= H ||
                       (rr.width === 0 && rr.height === 0))) continue;
        out.push({ d: n.d, x: n.text });
        continue;
      }
      if (!rr) {
        b = null;
      } else if (n.role === 'option' && !n.ia && rr.width === 0 && rr.height === 0) {
        var pr = e.closest('select');
        var prr = pr ? pr.getBoundingClientRect() : rr;
        b = [Math.round(prr.left + n.off[0]), Math.round(prr.top + n.off[1]), Math.round(prr.width), Math.round(prr.height)];
      } else {
        b = [Math.round(rr.left + n.off[0]), Math.round(rr.top + n.off[1]), Math.round(rr.width), Math.round(rr.height)];
      }
      if (vpOnly) {
        if (b[0] + b[2] <= 0 || b[1] + b[3] <= 0 || b[0] >= W || b[1] >= H) continue;
        if (b[2] === 0 && b[3] === 0) continue;
      }
      var t0 = prof ? performance.now() : 0;
      /* A text holder's content is its outline text: its name would say it
         again (and cost a walk of its subtree), so only an author's name counts. */
      var name = n.nm, recomputed = false;
      if (name === undefined || allNames || nameDirty.has(e)) {
        recomputed = true;
        depRec = keep ? { els: [], ids: [] } : null;
        name = !n.rf && AUTHOR_NAME_ROLES[n.role] ? authorName(e) : obsName(e, n.role);
        if (depRec) noteDeps(e, depRec);
        depRec = null;
        if (keep) { n.nm = name; if (n.o) n.o.nm = name; }
      }
      if (prof) tn += performance.now() - t0;
      if (n.role === 'image' && !name) continue;
      if ((n.role === 'region' || n.role === 'form') && !name && lower(e) !== 'form') continue;
      if (n.role === 'group' && !name) continue;
      /* Absent signals are left out rather than sent as null: on a page of
         thousands of controls the reply is megabytes, and its transfer and
         parsing cost as much as the walk. A node without a ref (structure,
         text holders, elements past the cap) needs no identity, bounds,
         selectors or index: only what its outline line shows. */
      /* What the line says apart from its depth, bounds, selectors and
         indexes, as JSON, kept on the entry while the element is clean:
         the same text a full walk gives (its name, states and value changed
         only with the element, which is then walked again; focus is checked
         here). */
      var mj = n.mj, tag, testid = null, id = null;
      /* an editing root: its value is its text (a change below it walks it
         again, as the path to any change is walked again) */
      var ce = n.rf && isEditRoot(e);
      var remake = mj === undefined || recomputed || n.mjf || e === activeEl;
      /* read only for what uses them: a kept line and no selectors need neither */
      if (n.rf && (remake || opts.sel !== false)) {
        testid = attr(e, 'data-testid');
        id = e.id || null;
      }
      if (remake) {
        var node = { role: n.role, name: name };
        if (n.rf) {
          tag = lower(e);
          node.tag = tag;
          node.prole = n.prole;
          node.sib = n.sib;
          if (testid !== null) node.testid = testid;
          if (id !== null) node.id = id;
          var al = attr(e, 'aria-label'), na = attr(e, 'name');
          if (al !== null) node.aria = al;
          if (na !== null) node.nattr = na;
        }
        var st = statesOf(e, n.role);
        if (st.length) node.states = st;
        if (n.role === 'heading') node.level = headingLevel(e);
        if (VALUE_ROLES[n.role] || ce) {
          var v = valueOf(e, n.role);
          if (v !== null) node.value = clip(v, 200);
          /* a field's hint, when it is not already its name and nothing is typed */
          var ph = attr(e, 'placeholder') || attr(e, 'aria-placeholder');
          if (ph && !v && textOn) {
            ph = fold(ph);
            if (ph && ph !== name) node.ph = clip(ph, 200);
          }
        }
        /* a frame of another site: where it comes from (its origin and path,
           no query), its key, by which the worker puts the frame's outline
           under it, and where its viewport starts in the top one (inside
           its border and padding), which the frame's bounds are offset by */
        if (n.role === 'Iframe') {
          var fu = frameSource(e);
          if (fu) node.u = fu;
          node.xk = xkeyOf(e);
          var fr = e.getBoundingClientRect(), fs = style(e);
          node.xo = [Math.round(n.off[0] + fr.left + (parseFloat(fs.borderLeftWidth) || 0) +
                                (parseFloat(fs.paddingLeft) || 0)),
                     Math.round(n.off[1] + fr.top + (parseFloat(fs.borderTopWidth) || 0) +
                                (parseFloat(fs.paddingTop) || 0))];
        }
        if (n.extra && n.extra.nr) node.nr = 1;
        /* ce: the outline shows the text as content, not again as a value */
        if (ce) node.ce = 1;
        mj = JSON.stringify(node);
        mj = mj.slice(1, mj.length - 1);
        if (keep) {
          n.mj = mj;
          n.mjf = e === activeEl;
          if (n.o) { n.o.mj = mj; n.o.mjf = n.mjf; }
        }
      }
      var line = { d: n.d, name: name, m: mj, t: '' };
      if (n.rf) {
        /* the bounds apart: a delta says "these lines moved by (dx, dy)" */
        line.b = wantB ? b : null;
        var t;
        if (opts.sel !== false && n.ts !== undefined && n.cm !== undefined && n.cm <= n.tsAt &&
            n.tsName === name && n.tsTid === testid && n.tsId === id) {
          /* kept: same name, test id and id, and the CSS path cannot have
             changed (no element above it had its children change since) */
          t = n.ts;
        } else {
          t = '';
          if (n.frame) t += ',"frame":' + JSON.stringify(n.frame);
          if (n.ia) t += ',"ia":1';
          if (prof) t0 = performance.now();
          if (opts.sel !== false) {
            t += ',"sel":' + JSON.stringify(selectorsOf(e, n.role, name, testid, id));
            if (keep) {
              var tgt = n.o || n;
              n.ts = tgt.ts = t; n.tsAt = tgt.tsAt = seq; n.tsName = tgt.tsName = name;
              n.tsTid = tgt.tsTid = testid; n.tsId = tgt.tsId = id;
            }
          }
          if (prof) tsel += performance.now() - t0;
        }
        /* the index and the previous one apart: a delta leaves them to the registry */
        var ip = ',"i":' + last.length;
        var pv = prevIdx.get(e);
        if (pv !== undefined) ip += ',"p":' + pv;
        line.t = t;
        line.ip = ip;
        line.el = e;
        last.push(e);
      }
      out.push(line);
    }
    fixDepths(out);
    if (textOn) out = shapeText(out);
    endCall();
    if (prof) {
      prof.push(performance.now());
      var ph = [];
      for (var q = 1; q < prof.length; q++) ph.push(Math.round(prof[q] - prof[q - 1]));
      return JSON.stringify({ walk_rects_rest: ph, names: Math.round(tn), sel: Math.round(tsel), count: out.length });
    }
    /* the reply, written out line by line: JSON.stringify's own text */
    var parts = new Array(out.length), cores = pure ? null : new Array(out.length);
    var bs = pure ? null : new Array(out.length);
    for (var w = 0; w < out.length; w++) {
      var o = out[w];
      if (o.x !== undefined) {
        parts[w] = '{"d":' + o.d + ',"x":' + JSON.stringify(o.x) + '}';
        if (cores) { cores[w] = parts[w]; bs[w] = null; }
        continue;
      }
      var head = '{"d":' + o.d + ',' + o.m + o.t, tail = (o.tx !== undefined ? ',"tx":' + JSON.stringify(o.tx) : '') + '}';
      if (o.ip) {
        var bb = o.b;
        parts[w] = head + (bb ? ',"b":[' + bb[0] + ',' + bb[1] + ',' + bb[2] + ',' + bb[3] + ']' : '') +
          o.ip + tail;
      } else {
        parts[w] = head + tail;
      }
      /* the line but for its bounds and indexes, which a delta carries apart */
      if (cores) { cores[w] = o.ip ? head + tail : parts[w]; bs[w] = o.ip ? o.b : null; }
    }
    var hd = '"url":' + JSON.stringify(location.href) + ',"title":' + JSON.stringify(document.title) +
      ',"truncated":' + (truncated || textCut) + ',"count":' + out.length;
    var json = '{' + hd + ',"nodes":[' + parts.join(',') + ']}';
    if (pure) return json;
    inc.prevLast = api.last;
    api.last = last;
    if (reuse) inc.stats.incr++; else inc.stats.full++;
    inc.stats.reused = nReused;
    remember(optsJson, json, keep, nodes, !reuse);
    /* A walk that stopped at the node cap did not reach the rest of the
       page, whose fragments are older than the changes this walk took in:
       the next walk is a full one (a page shortened below the cap would
       otherwise get them replayed) */
    if (stopped) inc.full = true;
    var was = inc.base;
    inc.base = null;
    /* Kept for the next delta only with this walk's own state (not a scope's). */
    if (keep && json.length <= BASE_MAX) {
      var els = new Array(out.length), pos = new Map();
      for (var u = 0; u < out.length; u++) {
        els[u] = out[u].el || null;
        if (els[u]) pos.set(els[u], u);
      }
      inc.base = { id: BASE_TAG + (++inc.baseSeq), head: hd, cores: cores, bs: bs, els: els, pos: pos };
    }
    if (base === undefined) return json;
    if (was && inc.base && base === was.id) {
      inc.stats.delta++;
      return deltaReply(was, inc.base, parts, hd);
    }
    return inc.base ? '{"rid":"' + inc.base.id + '",' + json.slice(1) : json;
  }

  /*
   * The reply as what changed since the one the registry holds (its "rid"
   * was passed as base): "ops" lists the new reply's nodes in order, each
   * run [q, n] the base's nodes q..q+n-1 as they were, a run [q, n, dx, dy]
   * the same with the bounds of those with bounds moved by (dx, dy) (an
   * item added above them), each object a node written out. A node is taken
   * from the base when its line is the same apart from "b", "i" and "p",
   * its bounds the same but for the run's move, and, for a node with an
   * index, when it is the same element: its "i" is then its place among the
   * indexed nodes and its "p" the base's "i" of it, which the registry works
   * out (registry.c). The registry falls back to a plain reply on any doubt.
   */
  var BASE_MAX = 16 * 1024 * 1024; /* characters of reply kept for a delta */
  var BASE_TAG = Math.random().toString(36).slice(2, 10) + Date.now().toString(36) + '.';
  var LOOK_AHEAD = 16; /* base lines a line without an element is looked for in */
  function deltaReply(was, now, parts, hd) {
    var ops = [], bc = was.cores, be = was.els, bb = was.bs, nb = bc.length, nbs = now.bs;
    var runQ = -1, runN = 0, runX = 0, runY = 0, runB = false, expect = 0;
    function endRun() {
      if (runN) ops.push('[' + runQ + ',' + runN + (runX || runY ? ',' + runX + ',' + runY : '') + ']');
      runN = 0;
    }
    for (var j = 0; j < parts.length; j++) {
      var el = now.els[j], core = now.cores[j];
      var q = el ? was.pos.get(el) : expect;
      if (!el && !(q < nb && bc[q] === core && be[q] === null)) {
        /* A line without an element is found by its place: the one after
           the last line taken, or a few further on when lines went or
           changed (past the ref cap, where one ref more above turns the
           last ref into a plain line, nothing else would find them). */
        for (var w = q + 1; w < nb && w <= q + LOOK_AHEAD; w++)
          if (be[w] === null && bc[w] === core) { q = w; break; }
      }
      if (q !== undefined && q < nb && bc[q] === core && (el ? be[q] === el : be[q] === null)) {
        /* the move of its bounds, when both have bounds; a line without
           any fits every run, one whose size changed none */
        var b0 = bb[q], b1 = nbs[j], has = false, dx = 0, dy = 0;
        if (b0 || b1) {
          if (!b0 || !b1 || b0[2] !== b1[2] || b0[3] !== b1[3]) { endRun(); ops.push(parts[j]); continue; }
          has = true;
          dx = b1[0] - b0[0];
          dy = b1[1] - b0[1];
        }
        if (runN && q === runQ + runN && (!has || !runB || (dx === runX && dy === runY))) {
          runN++;
          if (has && !runB) { runB = true; runX = dx; runY = dy; }
        } else {
          endRun();
          runQ = q; runN = 1; runB = has; runX = dx; runY = dy;
        }
        expect = q + 1;
        continue;
      }
      endRun();
      ops.push(parts[j]);
    }
    endRun();
    return '{' + hd + ',"rid":"' + now.id + '","base":"' + was.id + '","ops":[' + ops.join(',') + ']}';
  }

  /*
   * Incremental observation. A MutationObserver and the events below note
   * which elements changed (dirty roots); the next observe compares what no
   * mutation shows (field values, focus, hover, running animations, the
   * style sheets' shape, the viewport and media, the URL's fragment), then
   * walks again only the dirty roots' subtrees and the elements above them,
   * and reuses every other element's fragment of the last walk and the
   * names kept on its entries (walkEl). docs/architecture.md has the rules;
   * in short, correctness first:
   *   - a change at an element dirties its whole subtree (inherited styles,
   *     descendant selectors, roles that look at ancestors) and its
   *     ancestors are walked again (names from content, conditional
   *     structure);
   *   - with sibling combinators or :nth-* in the sheets, its parent's
   *     subtree; inside a table, the outermost table's;
   *   - :has(), container queries, validity and any pseudo-class not known
   *     here, an unreadable sheet, a changed sheet, viewport or media, the
   *     html/body/head elements, a style element: everything;
   *   - a name that read a label or an id reference elsewhere is computed
   *     again when that source changed, or when an id or a label's for it
   *     looked up appeared, went or moved;
   *   - shadow trees, slots and frames are walked afresh every time.
   * Nothing changed at all: the last reply, marked "same". CACHE_MS is a
   * safety net for what none of this sees (a rule replaced in place through
   * the CSSOM): a full walk at least that often. The randomized test turns
   * it off (_noage) to show that no answer it checks depends on it.
   */
  var CACHE_MS = 30000;
  var ROOTS_MAX = 400;    /* dirty roots before an observe walks everything */
  var SCAN_MAX = 2000;    /* added and removed subtrees kept to scan for ids */
  var DEPS_MAX = 100000;  /* name sources and ids kept before a full walk resets them */
  var inc = {
    key: null, json: null, full: true, t: 0, frags: new WeakMap(), prevLast: [],
    roots: [], kids: [], added: [], scan: [], ids: [], any: false, evs: false, ptr: false,
    labels: null,
    sheets: '', media: '', hash: '', modal: null, sx: 0, sy: 0, hover: null, press: null, focus: null,
    forms: [], srcOwners: new Map(), idWatch: new Map(), risk: { key: null },
    base: null, baseSeq: 0, seq: 0, kidsAt: new WeakMap(),
    stats: { full: 0, incr: 0, same: 0, reused: 0, delta: 0, warm: 0, pseudo: 0 }
  };
  var mo = null, watched = new WeakSet();
  var DIRTY_EVENTS = ['input', 'change', 'focusin', 'focusout', 'scroll', 'resize', 'load',
                      'transitionrun', 'transitionend', 'transitioncancel', 'animationstart',
                      'animationiteration', 'animationend', 'animationcancel', 'pageshow',
                      'popstate', 'hashchange', 'toggle', 'pointerdown', 'pointerup',
                      'pointerover', 'pointerout', 'mouseover', 'mouseout', 'keydown', 'keyup',
                      'submit', 'reset', 'invalid', 'fullscreenchange', 'visibilitychange'];
  /* events whose effect the hover comparison and the bounds (always taken
     again) cover: no dirty root */
  var POINTER_EVENTS = { pointerover: 1, pointerout: 1, mouseover: 1, mouseout: 1,
                         pointerdown: 1, pointerup: 1 };

  function onEvent(ev) {
    inc.evs = true;
    if (POINTER_EVENTS[ev.type]) { inc.ptr = true; return; }
    if (ev.type === 'scroll') return;
    var t = ev.target;
    if (t && t.nodeType === 1) {
      if (t.ownerDocument === document) addRoot(t);
    } else {
      inc.full = true; /* the window or the document: anything */
    }
  }
  function onFonts() { inc.evs = true; }

  function addRoot(el) {
    if (inc.roots.length >= ROOTS_MAX) inc.full = true;
    else inc.roots.push(el);
  }

  function noteRecords(recs) {
    if (recs.length) inc.any = true;
    for (var i = 0; i < recs.length && !inc.full; i++) {
      var r = recs[i], t = r.target;
      var kids = false;
      if (r.type === 'characterData') {
        t = t.parentNode;
      } else if (r.type === 'attributes') {
        var an = r.attributeName;
        if (an === 'id' || an === 'for') {
          if (inc.ids.length >= SCAN_MAX) { inc.full = true; break; }
          inc.ids.push(r.oldValue || '', attr(t, an) || '');
        }
        if (an === 'id' || an === 'for' || an === 'type') inc.labels = null;
      } else {
        kids = true;
        var lists = [r.addedNodes, r.removedNodes];
        for (var k = 0; k < 2; k++)
          for (var j = 0; j < lists[k].length; j++) {
            var nd = lists[k][j];
            if (nd.nodeType !== 1) continue;
            if (inc.scan.length >= SCAN_MAX) { inc.full = true; break; }
            inc.scan.push(nd);
            if (k === 0) inc.added.push(nd);
            if (inc.labels && labelTouch(nd, t)) inc.labels = null;
          }
      }
      if (!t) continue;
      if (t.nodeType === 11) t = t.host || null;
      if (!t || t.nodeType !== 1) { inc.full = true; continue; }
      if (t.ownerDocument !== document) continue; /* frames are walked afresh */
      var tn = lower(t);
      if (tn === 'style' || tn === 'link') { inc.full = true; continue; }
      if (kids) {
        if (inc.kids.length >= ROOTS_MAX) inc.full = true;
        else inc.kids.push(t);
      } else {
        addRoot(t);
      }
    }
  }

  var LABELABLE = 'input,select,textarea,button,meter,output,progress';
  /* whether adding or removing nd under parent can change which control a label names */
  function labelTouch(nd, parent) {
    if (lower(nd) === 'label' || nd.getElementsByTagName('label').length) return true;
    /* any id: getElementById(for) may now find another element first */
    if (nd.id || nd.querySelector('[id]')) return true;
    if (!nd.matches(LABELABLE) && !nd.querySelector(LABELABLE)) return false;
    return !!(parent && parent.nodeType === 1 && parent.closest('label'));
  }

  function watch(root, win) {
    if (watched.has(root)) return;
    watched.add(root);
    if (!mo) mo = new MutationObserver(noteRecords);
    mo.observe(root, { subtree: true, childList: true, attributes: true, characterData: true,
                       attributeOldValue: true });
    if (win) listen(root, win);
  }

  /*
   * The events that mark roots dirty, on root's window and root. The top
   * document's are added when the observer is installed (99-api.js), not
   * at its first observe: after the load event the 31 listeners took 0.1 to
   * 3.6 ms of that observe (0.6 at the median; a corpus page, eight fresh
   * contexts), at the document's start 0.1 to 0.4. What they record before
   * the first observe goes with its full walk (remember resets it); the
   * mutation observer still starts at the first observe, as a page's own
   * load would otherwise queue a record for every node the parser adds.
   */
  var listening = new WeakSet();
  function listen(root, win) {
    if (listening.has(root)) return;
    listening.add(root);
    for (var i = 0; i < DIRTY_EVENTS.length; i++)
      win.addEventListener(DIRTY_EVENTS[i], win === window ? onEvent : onFonts, true);
    /* An element's load (a frame's new document, an image) never reaches
       the window, even in the capture phase (the DOM standard leaves the
       window out of a load event's path): the document hears it. A
       same-origin frame that navigated was otherwise walked again only
       when something else changed. */
    root.addEventListener('load', win === window ? onEvent : onFonts, true);
    try {
      if (win.document.fonts) win.document.fonts.addEventListener('loadingdone', onFonts);
    } catch (e) { /* no font set: nothing to watch */ }
  }

  /* The style sheets' shape: their count and rule counts (unreadable ones count -1). */
  function sheetsKey(doc) {
    var parts = [], list = doc.styleSheets;
    for (var i = 0; i < list.length; i++) {
      var rl = rulesOf(list[i]);
      parts.push((rl === null ? -1 : rl.length) + (list[i].disabled ? 'd' : ''));
    }
    var ad = doc.adoptedStyleSheets || [];
    for (var j = 0; j < ad.length; j++) parts.push('a' + ad[j].cssRules.length);
    return parts.join(',');
  }

  function mediaKey() {
    var m = window.matchMedia;
    return window.innerWidth + 'x' + window.innerHeight + '@' + window.devicePixelRatio +
      (m('(prefers-color-scheme: dark)').matches ? 'd' : 'l') + (m('print').matches ? 'p' : 's') +
      (m('(prefers-reduced-motion: reduce)').matches ? 'r' : '');
  }

  /*
   * What the sheets' selectors make a change reach: sib, its siblings
   * (combinators + and ~, :nth-* and the like, whose "+" counts too);
   * global, anything (:has(), container queries, validity, pseudo-classes
   * not listed here, a sheet that cannot be read).
   */
  var SAFE_PSEUDO = {};
  ('hover active focus focus-within focus-visible checked indeterminate disabled enabled ' +
   'read-only read-write placeholder-shown required optional default in-range out-of-range ' +
   'target root empty first-child last-child only-child nth-child nth-last-child first-of-type ' +
   'last-of-type only-of-type nth-of-type nth-last-of-type not is where matches any -webkit-any ' +
   'lang dir link any-link -webkit-any-link visited open closed popover-open modal autofill ' +
   '-webkit-autofill scope host host-context fullscreen -webkit-full-screen before after ' +
   'first-line first-letter selection placeholder horizontal vertical decrement increment start ' +
   'end double-button single-button no-button corner-present window-inactive')
    .split(' ').forEach(function (n) { SAFE_PSEUDO[n] = 1; });
  var PSEUDO_RE = /(^|[^:\\]):([a-zA-Z-]+)/g;
  /* pseudo-classes that look at an element's siblings or children */
  var STRUCT_PSEUDO = { empty: 1, 'first-child': 1, 'last-child': 1, 'only-child': 1,
    'nth-child': 1, 'nth-last-child': 1, 'first-of-type': 1, 'last-of-type': 1,
    'only-of-type': 1, 'nth-of-type': 1, 'nth-last-of-type': 1 };

  function sheetRisk(key) {
    if (inc.risk.key === key) return inc.risk;
    var r = { key: key, global: false, sib: false, struct: false, within: false, hover: false };
    function sel(t) {
      if (/[+~]/.test(t)) r.sib = r.struct = true;
      PSEUDO_RE.lastIndex = 0;
      var m;
      while ((m = PSEUDO_RE.exec(t)) !== null) {
        var pn = m[2].toLowerCase();
        if (!SAFE_PSEUDO[pn]) r.global = true;
        else if (pn === 'focus-within') r.within = true;
        else if (STRUCT_PSEUDO[pn]) r.struct = true;
        else if (pn === 'hover' || pn === 'active') r.hover = true;
      }
    }
    function rules(list, depth) {
      if (depth > 16) { r.global = true; return; }
      for (var i = 0; i < list.length && !r.global; i++) {
        var ru = list[i];
        if (typeof CSSContainerRule !== 'undefined' && ru instanceof CSSContainerRule) r.global = true;
        if (typeof ru.selectorText === 'string') sel(ru.selectorText);
        if (ru.styleSheet) {
          var ir = rulesOf(ru.styleSheet);
          if (ir === null) r.global = true; else rules(ir, depth + 1);
        }
        if (ru.cssRules) rules(ru.cssRules, depth + 1);
      }
    }
    var all = Array.prototype.slice.call(document.styleSheets).concat(document.adoptedStyleSheets || []);
    for (var i = 0; i < all.length && !r.global; i++) {
      try {
        var rl = rulesOf(all[i]);
        if (rl === null) r.global = true; else rules(rl, 0);
      } catch (e) { r.global = true; }
    }
    inc.risk = r;
    return r;
  }

  function deepestMatch(sel) {
    var l = document.querySelectorAll(sel);
    return l.length ? l[l.length - 1] : null;
  }

  /* Roots for a state (hover, focus) that moved from a to b: the topmost
     element of each chain that left or entered it. */
  function chainRoots(a, b) {
    if (a === b) return;
    var anc = new Set();
    for (var p = b; p; p = parentEl(p)) anc.add(p);
    var top = null;
    for (var q = a; q && !anc.has(q); q = parentEl(q)) top = q;
    if (a && a.isConnected && top) addRoot(top);
    anc = new Set();
    for (p = a; p; p = parentEl(p)) anc.add(p);
    top = null;
    for (q = b; q && !anc.has(q); q = parentEl(q)) top = q;
    if (top) addRoot(top);
    else if (b === null && a !== null && a.isConnected) inc.full = true;
  }

  var FORM_TAG = table({ input: 1, textarea: 1, select: 1, option: 1 });

  /*
   * What this observe must do: {same: json} when nothing can have changed,
   * {full: true}, or {roots, path, names, allNames} for an incremental walk.
   */
  function planObserve(key, opts) {
    watch(document, window);
    if (mo) noteRecords(mo.takeRecords());
    if (opts.scope) inc.full = true;
    var body = document.body;
    var full = inc.full || inc.key !== key || inc.json === null || !body ||
      (Date.now() - inc.t > CACHE_MS && !opts._noage) || sheetsNow !== inc.sheets ||
      mediaKey() !== inc.media || location.hash !== inc.hash || findModal(document) !== inc.modal;
    if (full) return { full: true };
    /* what no mutation shows */
    var f = inc.forms;
    for (var j = 0; j < f.length; j += 6) {
      var e = f[j];
      if (e.value !== f[j + 1] || e.checked !== f[j + 2] || e.selectedIndex !== f[j + 3] ||
          e.selected !== f[j + 4] || e.indeterminate !== f[j + 5]) {
        addRoot(e);
        f[j + 1] = e.value; f[j + 2] = e.checked; f[j + 3] = e.selectedIndex;
        f[j + 4] = e.selected; f[j + 5] = e.indeterminate;
      }
    }
    var risk = sheetRisk(sheetsNow);
    var fo = deepActive(document);
    if (fo !== inc.focus) {
      if (risk.within) chainRoots(inc.focus, fo);
      else {
        if (inc.focus && inc.focus.isConnected && inc.focus.ownerDocument === document) addRoot(inc.focus);
        if (fo && fo.ownerDocument === document) addRoot(fo);
      }
    }
    inc.focus = fo;
    if (inc.ptr && risk.hover) {
      var hv = deepestMatch(':hover'), pr = deepestMatch(':active');
      chainRoots(inc.hover, hv);
      chainRoots(inc.press, pr);
      inc.hover = hv;
      inc.press = pr;
      inc.ptr = false;
    }
    if (typeof document.getAnimations !== 'function') inc.full = true;
    else {
      var an = document.getAnimations();
      for (var a = 0; a < an.length; a++) {
        if (an[a].playState !== 'running') continue;
        var tg = an[a].effect && an[a].effect.target;
        if (tg && tg.nodeType === 1 && tg.ownerDocument === document) addRoot(tg);
        else inc.full = true;
      }
    }
    var changed = inc.roots.length || inc.kids.length || inc.scan.length || inc.ids.length;
    if (inc.full || (changed && sheetRisk(sheetsNow).global)) return { full: true };
    /* a scroll, a font or a pointer event alone moves bounds, which a walk
       without them (b: false, not viewport_only) neither shows nor reads */
    var moves = opts.b !== false || !!opts.viewport_only;
    if (!changed && !inc.any &&
        (!moves || (!inc.evs && window.scrollX === inc.sx && window.scrollY === inc.sy))) {
      var ok = true;
      for (var i = 0; i < api.last.length && ok; i++) ok = api.last[i].isConnected;
      if (ok) {
        inc.stats.same++;
        return { same: '{"same":true,' + inc.json.slice(1) };
      }
    }
    /*
     * The roots, raised to what a change there can reach, and the path
     * above them. An element whose children changed is only walked again
     * (its other children reused), the added ones afresh, unless the sheets
     * look at siblings or positions, or it is a details (its first summary).
     */
    var sib = risk.sib, struct = risk.struct;
    var todo = inc.roots.slice(), shallow = new Set();
    for (var ad = 0; ad < inc.added.length; ad++)
      if (inc.added[ad].isConnected) todo.push(inc.added[ad]);
    /* An element that is a root of its own (an attribute of it changed, or
       it came in or moved) stays one when its children changed too: seed
       78083, a section's class made its heading upper case while a table
       left it, and the heading's old name was replayed. */
    var whole = new Set(todo);
    for (var c = 0; c < inc.kids.length; c++) {
      var kt = inc.kids[c];
      /* the CSS paths below kt may change: kept selectors made before this
         observe (inc.seq + 1, observeOnce) are not used below it */
      inc.kidsAt.set(kt, inc.seq + 1);
      if (struct || lower(kt) === 'details') todo.push(kt);
      else if (!whole.has(kt)) shallow.add(kt);
    }
    shallow.forEach(function (el) { todo.push(el); });
    var roots = new Set(), path = new Set();
    for (var r = 0; r < todo.length; r++) {
      var x = todo[r];
      if (!x.isConnected || x.ownerDocument !== document) continue;
      var only = shallow.has(x);
      /* a th's role looks at the other cells of its row: a row whose
         cells changed is walked again whole, in a table or not, and so is
         any element with a th among its children (outside a table, its
         parent stands for the row: seed 95431, a td moved in beside one) */
      if (only && (lower(x) === 'tr' || x.querySelector(':scope > th'))) only = false;
      if (sib && !only) x = parentEl(x) || x;
      /* inside a label, which control it names (its first labelable
         descendant) may have moved: the whole label */
      for (var lb = x.closest('label'); lb; lb = lb.parentElement && lb.parentElement.closest('label')) {
        x = lb;
        only = false;
      }
      for (var p = x; p; p = parentEl(p)) {
        var pt = lower(p), prl = attr(p, 'role');
        if (pt === 'table' || prl === 'table' || prl === 'grid' || prl === 'treegrid') { x = p; only = false; }
      }
      if (roots.has(x)) continue;
      if (!only) roots.add(x);
      var under = false;
      for (p = x; p; p = parentEl(p)) {
        if (p === body) { under = true; break; }
        if (path.has(p)) { under = true; break; }
        path.add(p);
      }
      if (!under || (x === body && !only)) return { full: true };
    }
    /* names that read something that changed */
    var names = new Set(), allNames = roots.size > 64;
    var ids = inc.ids.slice();
    for (var s = 0; s < inc.scan.length; s++) {
      var n = inc.scan[s];
      var nt = lower(n);
      if (nt === 'style' || nt === 'link' || (n.firstElementChild && n.querySelector('style,link')))
        return { full: true };
      if (n.id) ids.push(n.id);
      if (nt === 'label' && hasAttr(n, 'for')) ids.push(attr(n, 'for'));
      if (n.firstElementChild) {
        var inner = n.querySelectorAll('[id],label[for]');
        for (var q = 0; q < inner.length; q++) {
          if (inner[q].id) ids.push(inner[q].id);
          if (lower(inner[q]) === 'label' && hasAttr(inner[q], 'for')) ids.push(attr(inner[q], 'for'));
        }
      }
    }
    if (!allNames) {
      for (var k = 0; k < ids.length; k++) {
        var ow = inc.idWatch.get(ids[k]);
        if (ow) ow.forEach(function (o) { names.add(o); });
      }
      var rl = Array.from(roots);
      inc.srcOwners.forEach(function (owners, src) {
        var hit = !src.isConnected || path.has(src);
        for (var z = 0; z < rl.length && !hit; z++) hit = rl[z].contains(src);
        if (hit) owners.forEach(function (o) { names.add(o); });
      });
    }
    return { roots: roots, path: path, names: names, allNames: allNames };
  }

  function noteDeps(el, rec) {
    for (var i = 0; i < rec.els.length; i++) {
      var o = inc.srcOwners.get(rec.els[i]);
      if (!o) inc.srcOwners.set(rec.els[i], o = new Set());
      o.add(el);
    }
    for (var j = 0; j < rec.ids.length; j++) {
      var w = inc.idWatch.get(rec.ids[j]);
      if (!w) inc.idWatch.set(rec.ids[j], w = new Set());
      w.add(el);
    }
  }

  var FIELDS_MAX = 200000; /* fields compared; past this, a full walk takes the list afresh */
  function fieldNote(forms, e) {
    forms.push(e, e.value, e.checked, e.selectedIndex, e.selected, e.indeterminate);
  }

  /* after a walk: what the next observe compares against */
  function remember(key, json, keep, nodes, wasFull) {
    var added = inc.added;
    watch(document, window);
    if (mo) mo.takeRecords(); /* nothing can run during the walk: these predate it */
    inc.json = json;
    inc.key = key;
    inc.full = !keep || inc.srcOwners.size + inc.idWatch.size > DEPS_MAX;
    if (wasFull) {
      inc.t = Date.now();
      inc.hover = deepestMatch(':hover');
      inc.press = deepestMatch(':active');
      inc.ptr = false;
    }
    inc.roots = []; inc.kids = []; inc.added = []; inc.scan = []; inc.ids = [];
    inc.any = inc.evs = false;
    inc.sx = window.scrollX; inc.sy = window.scrollY;
    inc.sheets = sheetsNow !== null ? sheetsNow : sheetsKey(document);
    inc.media = mediaKey();
    inc.hash = location.hash;
    inc.modal = modalOf(document); /* what makes the rest inert changes nothing in it */
    inc.focus = deepActive(document);
    /* Scripts set value, checked and selectedIndex as properties: no
       mutation, no event. Keep them to compare: every field of the
       document, since a name may read a field the outline does not show
       (one inside a closed details that labels something). After a full
       walk all of them; after an incremental one, the list goes on (the
       comparison kept it current) with the fields of the added subtrees. */
    var forms = wasFull ? [] : inc.forms;
    var all = wasFull ? [document.documentElement] : added;
    for (var k = 0; k < all.length; k++) {
      var sub = all[k];
      if (!sub.isConnected) continue;
      var list = sub.querySelectorAll('input,textarea,select,option');
      if (FORM_TAG[lower(sub)]) fieldNote(forms, sub);
      for (var i = 0; i < list.length; i++) fieldNote(forms, list[i]);
    }
    inc.forms = forms;
    if (forms.length > FIELDS_MAX * 6) inc.full = true;
  }

  /*
   * The text lines' final shape, on the outline with its depths fixed: a
   * line that repeats the name of the element it sits in (a link's or a
   * heading's own text), or equals the name of the element just before or
   * after it (a label beside its checkbox), goes; an element whose only
   * children are text lines takes them after a colon ("tx").
   */
  function shapeText(out) {
    var kept = [], up = [];
    for (var i = 0; i < out.length; i++) {
      var n = out[i];
      if (n.x === undefined) {
        up[n.d] = n;
        up.length = n.d + 1;
        kept.push(n);
        continue;
      }
      var par = n.d > 0 ? up[n.d - 1] : null;
      if (par && par.name && par.name.indexOf(n.x) >= 0) continue;
      var prev = kept.length ? kept[kept.length - 1] : null;
      if (prev && prev.d === n.d && prev.x === undefined && prev.name === n.x) continue;
      var next = out[i + 1];
      if (next && next.d === n.d && next.x === undefined && next.name === n.x) continue;
      kept.push(n);
    }
    var res = [];
    for (var k = 0; k < kept.length; k++) {
      var e = kept[k];
      res.push(e);
      if (e.x !== undefined) continue;
      var j = k + 1, parts = [];
      while (j < kept.length && kept[j].d === e.d + 1 && kept[j].x !== undefined) parts.push(kept[j++].x);
      if (parts.length && (j === kept.length || kept[j].d <= e.d)) {
        e.tx = clipText(parts.join(' '));
        k = j - 1;
      }
    }
    return res;
  }

  /* long text is clipped (read returns all of it), never inside a surrogate pair */
  function clipText(t) {
    if (t.length <= TEXT_MAX) return t;
    var cut = TEXT_MAX;
    var c = t.charCodeAt(cut - 1);
    if (c >= 0xd800 && c <= 0xdbff) cut--;
    return t.slice(0, cut) + '\u2026';
  }

  /* after dropping nodes, depths must stay a proper outline */
  function fixDepths(out) {
    var stack = []; /* original depths of the kept ancestors */
    for (var i = 0; i < out.length; i++) {
      var d = out[i].d;
      while (stack.length && stack[stack.length - 1] >= d) stack.pop();
      out[i].d = stack.length;
      if (out[i].x === undefined) stack.push(d); /* a text line holds nothing */
    }
  }

  function optionNameFast(o) {
    if (lower(o) !== 'option') return nameOf(o); /* role=option on another element */
    var al = attr(o, 'aria-label');
    if (al && al.trim()) return fold(al);
    if (hasAttr(o, 'aria-labelledby')) return nameOf(o);
    return optionText(o);
  }

  function headingLevel(e) {
    var al = parseInt(attr(e, 'aria-level'), 10);
    if (al > 0) return al;
    var m = /^h([1-6])$/.exec(lower(e));
    return m ? +m[1] : 2;
  }

  /* the page gave el a name of its own (aria-label with words, or aria-labelledby) */
  function labelledByAuthor(el) {
    var al = attr(el, 'aria-label');
    return (al !== null && NOT_SPACE.test(al)) || attr(el, 'aria-labelledby') !== null;
  }

  function valueOf(e, role) {
    var tag = lower(e);
    if (tag === 'select') {
      var o = e.options[e.selectedIndex];
      return o ? optionText(o) : '';
    }
    if (tag === 'input' || tag === 'textarea') {
      if (e.type === 'password') return '';
      return String(e.value);
    }
    var vt = attr(e, 'aria-valuetext');
    if (vt !== null) return vt;
    var vn = attr(e, 'aria-valuenow');
    if (vn !== null) return vn;
    /* as Chromium: the rendered text, blocks apart */
    if (e.isContentEditable) return fold(e.innerText || '');
    return null;
  }

  function proleOf(el) {
    for (var p = parentEl(el); p; p = parentEl(p)) {
      var r = roleOf(p);
      if (!QUIET_ROLE[r]) return r;
    }
    return 'document';
  }

  function describe(selector) {
    var el = null;
    try { el = document.querySelector(selector); } catch (e) { el = null; }
    if (!el) return 'null';
    beginCall();
    try {
      if (isHiddenDeep(el) && lower(el) !== 'option') return JSON.stringify({ role: 'none', name: '', description: '' });
      var role = roleOf(el);
      var name = nameOf(el);
      var desc = descriptionOf(el);
      if (role === 'image' && lower(el) === 'img' && !name && attr(el, 'alt') === '') role = 'none';
      return JSON.stringify({ role: role, name: name, description: desc });
    } finally {
      endCall();
    }
  }

