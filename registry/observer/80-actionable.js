  /* ---- actionability ---------------------------------------------------- */

  /* the element whose box stands for el */
  function boxEl(el) {
    var t = lower(el);
    if (t === 'option') {
      var s = selectOfOption(el);
      var r = el.getBoundingClientRect();
      if (s && r.width === 0 && r.height === 0) return s;
    }
    if (style(el).display === 'contents') {
      var kids = flatChildren(el);
      for (var i = 0; i < kids.length; i++) {
        var k = kids[i];
        if (k.nodeType !== 1) continue;
        var b = boxEl(k);
        var kr = b.getBoundingClientRect();
        if (kr.width > 0 && kr.height > 0) return b;
      }
    }
    return el;
  }

  function isDisabled(el) {
    var tag = lower(el);
    if (el.disabled === true) return true;
    if (FORM_TAGS[tag] && safeMatches(el, ':disabled')) return true;
    for (var p = el; p; p = parentEl(p)) {
      if (attr(p, 'aria-disabled') === 'true') return true;
      if (p.inert) return true;
    }
    return false;
  }

  /* 1 when fill must wait for el (or the control its label stands for) to
     become editable, as Playwright's fill does: a field with the readonly
     attribute, or a contenteditable widget marked aria-readonly. Inputs that fill
     refuses outright (checkboxes, buttons) are left to that refusal. */
  var READONLY_ROLES = table({ textbox: 1, searchbox: 1, combobox: 1, spinbutton: 1, slider: 1,
    listbox: 1, grid: 1, gridcell: 1, checkbox: 1, radiogroup: 1, switch: 1, menuitemcheckbox: 1,
    menuitemradio: 1, columnheader: 1, rowheader: 1, treegrid: 1 });
  function isReadOnly(el) {
    if (lower(el) === 'label' && el.control) el = el.control;
    var tag = lower(el);
    if (tag === 'input' || tag === 'textarea') {
      var type = tag === 'input' ? (el.type || 'text').toLowerCase() : 'textarea';
      return !UNFILLABLE[type] && el.readOnly === true;
    }
    return !!el.isContentEditable && attr(el, 'aria-readonly') === 'true' &&
      !!READONLY_ROLES[roleOf(el)];
  }

  /* The modal dialog that keeps el out of the pointer's and the keyboard's
     reach: its document's, or one in a document above the frame el is in;
     null when there is none. */
  function modalOver(el) {
    for (var e = el, guard = 0; e && guard < 16; guard++) {
      if (blockedByModal(e)) return modalOf(e.ownerDocument);
      var d = e.ownerDocument;
      e = d === document ? null : frameOfDoc(d);
    }
    return null;
  }

  function viewRect(doc) {
    var w = doc.defaultView || window;
    return { w: w.innerWidth, h: w.innerHeight };
  }

  /* el's rect in top-level viewport coordinates */
  function topRect(el) {
    var r = el.getBoundingClientRect();
    var off = frameOffset(el.ownerDocument);
    return { left: r.left + off[0], top: r.top + off[1], width: r.width, height: r.height };
  }

  function fullyInView(el) {
    var r = el.getBoundingClientRect();
    var v = viewRect(el.ownerDocument);
    if (r.left < 0 || r.top < 0 || r.right > v.w || r.bottom > v.h) return false;
    if (el.ownerDocument !== document) {
      var t = topRect(el);
      if (t.left < 0 || t.top < 0 || t.left + t.width > window.innerWidth || t.top + t.height > window.innerHeight)
        return false;
    }
    return true;
  }

  function scrollIntoViewCentered(el) {
    var o = { block: 'center', inline: 'center', behavior: 'instant' };
    el.scrollIntoView(o);
    /* make sure every frame on the way is itself in view in its parent */
    for (var d = el.ownerDocument, guard = 0; d !== document && guard < 16; guard++) {
      var f = frameOfDoc(d);
      if (!f) break;
      var t = topRect(el);
      if (t.left < 0 || t.top < 0 || t.left + t.width > window.innerWidth || t.top + t.height > window.innerHeight) {
        var fr = f.getBoundingClientRect();
        var fv = viewRect(f.ownerDocument);
        if (fr.left < 0 || fr.top < 0 || fr.right > fv.w || fr.bottom > fv.h)
          f.scrollIntoView(o);
      }
      d = f.ownerDocument;
    }
  }

  /* the point a click goes to, in top-level CSS px */
  function clickPoint(el) {
    var rects = el.getClientRects();
    var r = null;
    for (var i = 0; i < rects.length; i++)
      if (rects[i].width > 0 && rects[i].height > 0) { r = rects[i]; break; }
    if (!r) r = el.getBoundingClientRect();
    var left = r.left, top = r.top, right = r.right, bottom = r.bottom;
    /* keep to the part of the rect that is in its own viewport, if any */
    var v = viewRect(el.ownerDocument);
    var cl = Math.max(left, 0), ct = Math.max(top, 0), cr = Math.min(right, v.w), cb = Math.min(bottom, v.h);
    if (cr > cl && cb > ct) { left = cl; top = ct; right = cr; bottom = cb; }
    var off = frameOffset(el.ownerDocument);
    var x = (left + right) / 2 + off[0], y = (top + bottom) / 2 + off[1];
    if (el.ownerDocument !== document) {
      /* and to the part visible in the top-level viewport */
      var tl = left + off[0], tt = top + off[1], tr = right + off[0], tb = bottom + off[1];
      var c2l = Math.max(tl, 0), c2t = Math.max(tt, 0), c2r = Math.min(tr, window.innerWidth), c2b = Math.min(tb, window.innerHeight);
      if (c2r > c2l && c2b > c2t) { x = (c2l + c2r) / 2; y = (c2t + c2b) / 2; }
    }
    return { x: x, y: y };
  }

  function round2(v) { return Math.round(v * 100) / 100; }

  /* the element a click at top-level (x, y) lands on, through shadow roots and frames */
  function deepHit(x, y) {
    var doc = document, ox = 0, oy = 0;
    var hit = doc.elementFromPoint(x, y);
    for (var guard = 0; hit && guard < 64; guard++) {
      if (hit.shadowRoot) {
        var h2 = hit.shadowRoot.elementFromPoint(x - ox, y - oy);
        if (h2 && h2 !== hit && hit.shadowRoot.contains(h2)) { hit = h2; continue; }
      }
      if (isFrameTag(lower(hit))) {
        var d = frameDoc(hit);
        if (d) {
          var r = hit.getBoundingClientRect();
          var cs = (hit.ownerDocument.defaultView || window).getComputedStyle(hit);
          var nx = ox + r.left + (parseFloat(cs.borderLeftWidth) || 0) + (parseFloat(cs.paddingLeft) || 0);
          var ny = oy + r.top + (parseFloat(cs.borderTopWidth) || 0) + (parseFloat(cs.paddingTop) || 0);
          var h3 = d.elementFromPoint(x - nx, y - ny);
          if (h3) { hit = h3; ox = nx; oy = ny; continue; }
        }
      }
      break;
    }
    return hit;
  }

  function hitOk(el, hit) {
    if (!hit) return false;
    if (hit === el || deepContains(el, hit)) return true;
    /* a control drawn under its own label (custom checkboxes) */
    var labels = el.labels;
    if (labels) for (var i = 0; i < labels.length; i++)
      if (deepContains(labels[i], hit)) return true;
    /* a label whose control sits on top of it */
    if (lower(el) === 'label' && el.control && deepContains(el.control, hit)) return true;
    /* an option of a closed select: the select */
    if (lower(el) === 'option') {
      var s = selectOfOption(el);
      if (s && deepContains(s, hit)) return true;
    }
    return false;
  }

  function shortDesc(e) {
    if (!e) return 'nothing (the point is outside the viewport)';
    var s = lower(e);
    if (e.id) s += '#' + e.id;
    var cls = typeof e.className === 'string' ? e.className.trim() : (attr(e, 'class') || '').trim();
    if (cls) s += '.' + cls.split(/\s+/).slice(0, 3).join('.');
    if (!e.id && !cls) {
      var tid = attr(e, 'data-testid');
      if (tid) s += '[data-testid="' + tid + '"]';
      else {
        var r = attr(e, 'role');
        if (r) s += '[role="' + r + '"]';
      }
    }
    return clip(s, 120);
  }

  function nextFrame() {
    return new Promise(function (res) {
      var done = false;
      var fin = function () { if (!done) { done = true; res(); } };
      try { requestAnimationFrame(fin); } catch (e) { /* no rAF: the timer below */ }
      setTimeout(fin, 100);
    });
  }

  function rectOf(el) {
    var r = topRect(el);
    return [r.left, r.top, r.width, r.height];
  }

  function actionableSafe(i, optsJson) {
    try {
      return actionable(i, optsJson).catch(function (e) {
        return fail('page-side error: ' + (e && e.message ? e.message : String(e)));
      });
    } catch (e) {
      return Promise.resolve(fail('page-side error: ' + (e && e.message ? e.message : String(e))));
    }
  }

  function actionable(i, optsJson) {
    var opts = parseOpts(optsJson);
    var el = elAt(i);
    if (!el || !connected(el)) return Promise.resolve(J({ state: 'detached' }));
    var scrolled = false;
    var pre = guarded(function () {
      var b = boxEl(el);
      if (opts.scroll && visVisible(el) && !fullyInView(b)) {
        scrollIntoViewCentered(b);
        scrolled = true;
      }
      var first = checkVisible(el);
      if (first) return first;
      return blockedOrDisabled();
    })();
    function blockedOrDisabled() {
      /* behind a modal dialog: no click or key reaches it until the dialog
         closes, which waiting alone rarely brings (act.c waits a little) */
      if (opts.enabled || opts.hit) {
        var m = modalOver(el);
        if (m) return J({ state: 'blocked', by: shortDesc(m) });
      }
      if (opts.enabled && isDisabled(el)) return J({ state: 'disabled' });
      if (opts.editable && isReadOnly(el)) return J({ state: 'read-only' });
      return null;
    }
    if (pre) return Promise.resolve(pre);
    /*
     * Stability: the box compared with itself one frame apart. With no CSS
     * animation or transition running in the element's document or the top
     * one, it cannot move between frames unless a script moves it: when
     * nothing was scrolled it is checked at once (a click then costs a few
     * DevTools round trips, not frames), and after a scroll the box as the
     * scroll left it is compared with the box a frame later, once the
     * page's scroll listeners and frame callbacks ran (a header that
     * shrinks on scroll, content that loads above). While something
     * animates, the boxes of the next two frames are compared.
     */
    var still = !animating(el.ownerDocument) && !animating(document);
    function box() {
      return connected(el) ? guarded(function () { return rectOf(boxEl(el)); })() : null;
    }
    if (!scrolled && still) return Promise.resolve(finish(box()));
    var first = still ? Promise.resolve(box()) : nextFrame().then(box);
    return first.then(function (r1) {
      return nextFrame().then(function () { return finish(r1); });
    });

    function finish(r1) {
      return guarded(function () {
        if (!connected(el)) return J({ state: 'detached' });
        var h = checkVisible(el) || blockedOrDisabled();
        if (h) return h;
        var b = boxEl(el);
        var r2 = rectOf(b);
        if (!r1 || typeof r1 === 'string' || r1[0] !== r2[0] || r1[1] !== r2[1] || r1[2] !== r2[2] || r1[3] !== r2[3])
          return J({ state: 'unstable' });
        var p = clickPoint(b);
        if (opts.hit) {
          var hit = deepHit(p.x, p.y);
          if (!hitOk(el, hit) && !(b !== el && hitOk(b, hit)))
            return J({ state: 'covered', by: shortDesc(hit) });
        }
        /* the page's scroll as the pointer will find it: the session's checkpoint takes it from here */
        return J({ state: 'ok', x: round2(p.x), y: round2(p.y), w: round2(r2[2]), h: round2(r2[3]),
                   sx: Math.round(window.scrollX), sy: Math.round(window.scrollY) });
      })();
    }
  }

  /* 1 when a CSS animation or transition is running in doc. */
  function animating(doc) {
    if (!doc || typeof doc.getAnimations !== 'function') return true;
    var a = doc.getAnimations();
    for (var i = 0; i < a.length; i++)
      if (a[i].playState === 'running') return true;
    return false;
  }

  /* null when el can be seen, else the JSON state */
  function checkVisible(el) {
    if (!connected(el)) return J({ state: 'detached' });
    var t = lower(el);
    var b = boxEl(el);
    var vis = b !== el && t === 'option' ? visVisible(b) && reached(el, false) : visVisible(el);
    if (!vis) return J({ state: 'hidden' });
    var r = b.getBoundingClientRect();
    if (!(r.width > 0 && r.height > 0)) return J({ state: 'hidden' });
    return null;
  }

