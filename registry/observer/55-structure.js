  /* ---- the walk's structure around one element ----------------------------
   *
   * observe computes parent role, sibling index, frame path and visibility
   * while it walks. The functions below find the same answers for a single
   * element without walking the page, so that identity() and inspect() agree
   * with what observe emitted for that element.
   */

  var ROOT = { root: 1 };       /* the walk starts at the children of this */
  var OFFTREE = { off: 1 };     /* the walk never gets here */
  var XHTML = 'http://www.w3.org/1999/xhtml', SVGNS = 'http://www.w3.org/2000/svg';

  function isFrameTag(t) { return t === 'iframe' || t === 'frame'; }

  function frameDoc(f) {
    var d = null;
    try { d = f.contentDocument; } catch (e) { d = null; }
    return d && d.documentElement ? d : null;
  }
  function frameOfDoc(d) {
    try { return d.defaultView ? d.defaultView.frameElement : null; } catch (e) { return null; }
  }
  function rootOf(d) { return d.body || d.documentElement; }

  /* the select whose popup or list holds an option in observe's walk */
  function selectOfOption(o) {
    for (var p = o.parentElement; p; p = p.parentElement) {
      var t = lower(p);
      if (t === 'select') return p;
      if (t !== 'optgroup' && t !== 'hr' && t !== 'div') return null;
    }
    return null;
  }

  /* the element whose children list (in observe's walk) holds el */
  function walkParent(el) {
    if (lower(el) === 'option') {
      var s = selectOfOption(el);
      if (s) return s;
    }
    var q = el.assignedSlot;
    if (!q) {
      var p = el.parentNode;
      if (!p) return OFFTREE;
      if (p.nodeType === 11) {
        q = p.host;
        if (!q) return OFFTREE;
      } else if (p.nodeType === 1) {
        if (p.shadowRoot) return OFFTREE; /* a light child no slot takes */
        if (lower(p) === 'slot' && p.assignedElements().length) return OFFTREE; /* fallback */
        q = p;
      } else {
        return OFFTREE;
      }
    }
    var d = q.ownerDocument;
    if (q === rootOf(d)) {
      if (d === document) return ROOT;
      return frameOfDoc(d) || OFFTREE;
    }
    return q;
  }

  var reachMemo = null; /* [ax Map, visual Map], per call */

  /* the checks observe makes before it counts an element as a sibling */
  function passesWalk(el) {
    var tag = lower(el);
    if (SKIP_TAGS[tag]) return false;
    if (el.namespaceURI && el.namespaceURI !== XHTML && el.namespaceURI !== SVGNS) return false;
    if (style(el).display === 'none') return false;
    if (attr(el, 'aria-hidden') === 'true') return false;
    if (el.inert || blockedByModal(el)) return false;
    return true;
  }

  /*
   * Whether observe's walk gets to el (ax) or whether el is rendered at all
   * (!ax: aria-hidden, inert and foreign namespaces do not matter).
   * visibility is not checked here: the walk goes on below it.
   */
  function reached(el, ax) {
    if (!reachMemo) reachMemo = [new Map(), new Map()];
    var m = reachMemo[ax ? 0 : 1];
    var v = m.get(el);
    if (v === undefined) {
      v = reachedRaw(el, ax);
      m.set(el, v);
    }
    return v;
  }
  function reachedRaw(el, ax) {
    var tag = lower(el);
    var d = el.ownerDocument;
    if (el === rootOf(d)) {
      if (style(el).display === 'none') return false;
      if (d === document) return true;
      var fe = frameOfDoc(d);
      return !!fe && reached(fe, ax);
    }
    var p = walkParent(el);
    if (p === OFFTREE) return false;
    if (tag === 'option' && p !== ROOT && lower(p) === 'select') {
      if (!reached(p, ax)) return false;
      if (visHidden(p) || roleOf(p) !== 'listbox') return !el.hidden;
      return style(el).display !== 'none';
    }
    if (SKIP_TAGS[tag]) return false;
    if (ax && el.namespaceURI && el.namespaceURI !== XHTML && el.namespaceURI !== SVGNS) return false;
    if (style(el).display === 'none') return false;
    if (ax && (attr(el, 'aria-hidden') === 'true' || el.inert || blockedByModal(el))) return false;
    if (p === ROOT) return true;
    if (!reached(p, ax)) return false;
    var pt = lower(p);
    if (isFrameTag(pt)) return true;
    if (pt === 'input' || pt === 'textarea' || pt === 'img' || pt === 'select') return false;
    if (style(p).contentVisibility === 'hidden') return false;
    if (pt === 'details' && !p.open && !p.shadowRoot && closedDetailsKids(p)[0] !== el) return false;
    return true;
  }

  /* observe would report el (if its role is one it reports) */
  function axVisible(el) {
    return reached(el, true) && !visHidden(el);
  }
  /* a person can see el: rendered, not visibility:hidden, nor in a hidden frame */
  function visVisible(el) {
    if (!reached(el, false) || visHidden(el)) return false;
    for (var d = el.ownerDocument; d !== document;) {
      var f = frameOfDoc(d);
      if (!f) return false;
      if (visHidden(f)) return false;
      d = f.ownerDocument;
    }
    return true;
  }

  /* the role observe gives el */
  function obsRole(el) {
    if (lower(el) === 'option' && selectOfOption(el)) return 'option';
    return roleOf(el);
  }
  /* the name observe gives el for that role */
  function obsName(el, role) {
    return clip(role === 'option' ? optionNameFast(el) : nameOf(el), 200);
  }

  /*
   * Outline roles whose name, when they have no ref, is worth only what an
   * author wrote: text holders whose name Chromium takes from their content
   * (cells, rows, terms: the outline shows that content as their text), and
   * structure that takes no name from its content or from the host
   * language (paragraphs, lists, landmarks). Headings, images, groups,
   * tables and figures keep the whole computation.
   */
  var AUTHOR_NAME_ROLES = { cell: 1, gridcell: 1, columnheader: 1, rowheader: 1, row: 1,
    term: 1, tooltip: 1, paragraph: 1, list: 1, listitem: 1, blockquote: 1, alert: 1,
    status: 1, log: 1, timer: 1, marquee: 1, note: 1, definition: 1, article: 1, feed: 1,
    banner: 1, navigation: 1, main: 1, contentinfo: 1, complementary: 1, search: 1,
    menu: 1, menubar: 1, tablist: 1, tree: 1, toolbar: 1, radiogroup: 1, grid: 1 };

  /* The name an author gave el (aria-labelledby, aria-label, title), or "". */
  function authorName(el) {
    if (!hasAttr(el, 'aria-labelledby') && !hasAttr(el, 'aria-label') && !hasAttr(el, 'title'))
      return '';
    return obsName(el, '');
  }

  /* the parent role observe gives el */
  function walkProle(el) {
    var p = walkParent(el);
    if (p !== ROOT && p !== OFFTREE && lower(p) === 'select' && lower(el) === 'option') {
      var sr = visHidden(p) ? 'none' : roleOf(p);
      if (sr === 'combobox') return 'MenuListPopup';
      if (!QUIET_ROLE[sr]) return sr;
      p = walkParent(p);
    }
    for (var guard = 0; guard < 4096; guard++) {
      if (p === ROOT) return 'document';
      if (p === OFFTREE) {
        /* not in the walk: fall back to the DOM parents */
        return proleOf(el);
      }
      var r = visHidden(p) ? 'none' : roleOf(p);
      if (!QUIET_ROLE[r]) return r;
      p = walkParent(p);
    }
    return 'document';
  }

  /* the children observe's walk visits under a walked element p */
  function walkKidsOf(p) {
    if (p === ROOT) {
      var root = rootOf(document);
      return root.shadowRoot ? root.shadowRoot.children : root.children;
    }
    var t = lower(p);
    if (isFrameTag(t)) {
      var d = frameDoc(p);
      if (!d) return [];
      var b = rootOf(d);
      return b.children;
    }
    if (t === 'input' || t === 'textarea' || t === 'img' || t === 'select') return [];
    if (style(p).contentVisibility === 'hidden') return [];
    if (t === 'details' && !p.open && !p.shadowRoot) return closedDetailsKids(p);
    return p.shadowRoot ? p.shadowRoot.children : t === 'slot' ? slotKidsOf(p) : p.children;
  }
  /* a closed <details> renders its first summary only */
  function closedDetailsKids(el) {
    for (var c = el.firstElementChild; c; c = c.nextElementSibling)
      if (lower(c) === 'summary') return [c];
    return [];
  }
  function slotKidsOf(slot) {
    var a = slot.assignedElements();
    return a.length ? a : slot.children;
  }
  function sharesCounter(p) {
    /* a display:contents element walks its children with its parent's counter */
    if (p === ROOT || p === OFFTREE) return false;
    var t = lower(p);
    if (isFrameTag(t) || t === 'select' || t === 'input' || t === 'textarea' || t === 'img') return false;
    return style(p).display === 'contents';
  }

  /* the sibling index observe gives el */
  function walkSib(el) {
    var p = walkParent(el);
    if (p === OFFTREE) return 0;
    var tag = lower(el);
    if (p !== ROOT && lower(p) === 'select' && tag === 'option') {
      var listbox = !visHidden(p) && roleOf(p) === 'listbox';
      var opts = p.querySelectorAll('option'), n = 0;
      for (var i = 0; i < opts.length; i++) {
        var o = opts[i];
        if (o === el) return n;
        if (listbox ? style(o).display === 'none' : o.hidden) continue;
        n++;
      }
      return n;
    }
    var owner = p;
    while (sharesCounter(owner)) owner = walkParent(owner);
    if (owner === OFFTREE) return 0;
    var st = { n: 0, found: false };
    countSibs(walkKidsOf(owner), tag, el, st);
    return st.n;
  }
  function countSibs(list, tag, el, st) {
    for (var i = 0; i < list.length; i++) {
      var k = list[i];
      if (k === el) { st.found = true; return; }
      if (k.nodeType !== 1 || !passesWalk(k)) continue;
      if (lower(k) === tag) st.n++;
      if (sharesCounter(k)) {
        countSibs(walkKidsOf(k), tag, el, st);
        if (st.found) return;
      }
    }
  }

  /* frame path and offset of a document, as observe computes them */
  function frameInfo(d) {
    if (d === document) return { path: '', off: [0, 0] };
    var f = frameOfDoc(d);
    if (!f) return { path: '', off: [0, 0] };
    var pi = frameInfo(f.ownerDocument);
    var n = frameIndex(f);
    var r = f.getBoundingClientRect();
    var cs = style(f);
    var off = [pi.off[0] + r.left + (parseFloat(cs.borderLeftWidth) || 0) + (parseFloat(cs.paddingLeft) || 0),
               pi.off[1] + r.top + (parseFloat(cs.borderTopWidth) || 0) + (parseFloat(cs.paddingTop) || 0)];
    return { path: pi.path === '' ? String(n) : pi.path + '.' + n, off: off };
  }
  /* offset of a document's viewport in the top-level viewport */
  function frameOffset(d) {
    var x = 0, y = 0;
    for (var guard = 0; d !== document && guard < 64; guard++) {
      var f = frameOfDoc(d);
      if (!f) break;
      var r = f.getBoundingClientRect();
      var cs = style(f);
      x += r.left + (parseFloat(cs.borderLeftWidth) || 0) + (parseFloat(cs.paddingLeft) || 0);
      y += r.top + (parseFloat(cs.borderTopWidth) || 0) + (parseFloat(cs.paddingTop) || 0);
      d = f.ownerDocument;
    }
    return [x, y];
  }

  /* index of frame element f among the frames observe's walk enters in its document */
  function frameIndex(f) {
    var d = f.ownerDocument, n = 0;
    var list = [];
    collectFrames(d, list);
    for (var i = 0; i < list.length; i++) {
      if (list[i] === f) return n;
      if (reached(list[i], true) && frameDoc(list[i])) n++;
    }
    return n;
  }
  function collectFrames(root, out) {
    var all = root.querySelectorAll('*');
    for (var i = 0; i < all.length; i++) {
      var e = all[i];
      if (isFrameTag(e.localName)) out.push(e);
      if (e.shadowRoot) collectFrames(e.shadowRoot, out);
    }
  }

  /* every element of the page in document order: open shadow trees follow
     their host, same-origin frame documents follow their frame element */
  function deepElements(out, roots) {
    function add(root) {
      if (roots) roots.push(root);
      var all = root.querySelectorAll('*');
      for (var i = 0; i < all.length; i++) {
        var e = all[i];
        out.push(e);
        if (e.shadowRoot) add(e.shadowRoot);
        var t = e.localName;
        if (t === 'iframe' || t === 'frame') {
          var d = frameDoc(e);
          if (d) add(d);
        }
      }
    }
    add(document);
    return out;
  }

  /* parent across shadow and frame boundaries */
  function composedParent(x) {
    var p = parentEl(x);
    if (p) return p;
    if (x.parentNode && x.parentNode.nodeType === 9) return frameOfDoc(x.parentNode);
    return null;
  }
  function deepContains(a, b) {
    for (var x = b; x; x = composedParent(x)) if (x === a) return true;
    return false;
  }

