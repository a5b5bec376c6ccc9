  /* ---- read, scroll, focus, wait ----------------------------------------- */

  function pageText() {
    var b = document.body || document.documentElement;
    var s = b ? b.innerText || '' : '';
    /* same-origin frames: their text is part of what a person sees */
    var fr = [];
    collectFrames(document, fr);
    for (var i = 0; i < fr.length; i++) {
      var d = frameDoc(fr[i]);
      if (!d) continue;
      var fb = d.body || d.documentElement;
      if (fb) s += '\n' + (fb.innerText || '');
      collectFrames(d, fr);
    }
    return s;
  }

  function read(i, what) {
    if (what === undefined || what === null || what === '') what = 'text';
    var el;
    var whole = i === -1 || i === '-1';
    if (whole) {
      el = document.body || document.documentElement;
    } else {
      var t = target(i);
      if (t.err) return t.err;
      el = t.el;
    }
    switch (what) {
      case 'text':
        if (whole) return J({ value: pageText() });
        return J({ value: el.innerText !== undefined ? el.innerText : el.textContent || '' });
      case 'html':
        return J({ value: whole ? document.documentElement.outerHTML : el.outerHTML });
      case 'value': {
        var c = retarget(el), tag = lower(c);
        if (tag === 'select') {
          if (c.multiple) {
            var vs = [];
            for (var k = 0; k < c.options.length; k++) if (c.options[k].selected) vs.push(c.options[k].value);
            return J({ value: vs });
          }
          return J({ value: c.value });
        }
        if (tag === 'input') {
          var ty = (c.type || '').toLowerCase();
          if (ty === 'checkbox' || ty === 'radio') return J({ value: c.checked ? c.value : null, checked: c.checked });
          return J({ value: c.value });
        }
        if (tag === 'textarea' || tag === 'output' || tag === 'option' || tag === 'button' ||
            tag === 'meter' || tag === 'progress' || tag === 'li' || tag === 'data' || tag === 'param')
          return J({ value: String(c.value) });
        if (c.isContentEditable) return J({ value: c.innerText });
        var vn = attr(c, 'aria-valuetext');
        if (vn === null) vn = attr(c, 'aria-valuenow');
        if (vn !== null) return J({ value: vn });
        return fail('the element has no value: it is not a form control');
      }
      case 'attributes': {
        var o = {};
        for (var a = 0; a < el.attributes.length; a++) o[el.attributes[a].name] = el.attributes[a].value;
        return J({ value: o });
      }
      default:
        return fail('read: "what" is one of text, html, value, attributes');
    }
  }

  function canScroll(e) {
    var s = style(e);
    var oy = s.overflowY, ox = s.overflowX;
    var y = (oy === 'auto' || oy === 'scroll' || oy === 'overlay') && e.scrollHeight > e.clientHeight;
    var x = (ox === 'auto' || ox === 'scroll' || ox === 'overlay') && e.scrollWidth > e.clientWidth;
    return x || y;
  }

  function scroll(i, optsJson) {
    var o = parseOpts(optsJson);
    var dx = +o.dx || 0, dy = +o.dy || 0, to = o.to || null;
    if (to === 'target') to = null;
    if (to !== null && to !== 'top' && to !== 'bottom') return fail('scroll: "to" is top, bottom or null');
    var whole = i === -1 || i === '-1';
    var se = document.scrollingElement || document.documentElement;
    function winPos() { return J({ x: round2(window.scrollX), y: round2(window.scrollY) }); }
    if (whole) {
      if (to === 'top') window.scrollTo({ left: window.scrollX, top: 0, behavior: 'instant' });
      else if (to === 'bottom') window.scrollTo({ left: window.scrollX, top: se.scrollHeight, behavior: 'instant' });
      if (dx || dy) window.scrollBy({ left: dx, top: dy, behavior: 'instant' });
      return winPos();
    }
    var t = target(i);
    if (t.err) return t.err;
    var el = t.el;
    if (to === null && !dx && !dy) {
      boxEl(el).scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
      return winPos();
    }
    /* the element, else its nearest scrollable ancestor, else its window */
    var sc = null;
    for (var p = el; p; p = parentEl(p)) {
      if (p === se || lower(p) === 'body' || lower(p) === 'html') break;
      if (canScroll(p)) { sc = p; break; }
    }
    if (!sc) {
      var w = el.ownerDocument.defaultView || window;
      var wse = el.ownerDocument.scrollingElement || el.ownerDocument.documentElement;
      if (to === 'top') w.scrollTo({ left: w.scrollX, top: 0, behavior: 'instant' });
      else if (to === 'bottom') w.scrollTo({ left: w.scrollX, top: wse.scrollHeight, behavior: 'instant' });
      if (dx || dy) w.scrollBy({ left: dx, top: dy, behavior: 'instant' });
      return J({ x: round2(w.scrollX), y: round2(w.scrollY) });
    }
    if (to === 'top') sc.scrollTop = 0;
    else if (to === 'bottom') sc.scrollTop = sc.scrollHeight;
    if (dx || dy) sc.scrollBy({ left: dx, top: dy, behavior: 'instant' });
    return J({ x: round2(sc.scrollLeft), y: round2(sc.scrollTop) });
  }

  /*
   * Focus for focus, type and press. A field that did not have the focus
   * gets the caret at the end of its text, as a click after its last word
   * would put it: typing into a box that holds text adds to it, and
   * Backspace takes its last character (a field focused from script starts
   * with the caret before its first one, where typing went before). A field
   * that has the focus keeps its caret: the agent may have put it there
   * (keys, an earlier type). fill replaces the text either way.
   */
  function focus(i) {
    var t = target(i);
    if (t.err) return t.err;
    var el = t.el;
    var had = false;
    try { had = el.getRootNode().activeElement === el; } catch (e) { had = false; }
    el.focus();
    if (!had) caretToEnd(el);
    return J({ ok: true });
  }

  function caretToEnd(el) {
    try {
      var tag = lower(el);
      if (tag === 'input' || tag === 'textarea') {
        var n = el.value.length;
        el.setSelectionRange(n, n); /* throws for inputs without a caret (email, number) */
      } else if (el.isContentEditable) {
        var d = el.ownerDocument, r = d.createRange();
        r.selectNodeContents(el);
        r.collapse(false);
        var sel = d.getSelection();
        sel.removeAllRanges();
        sel.addRange(r);
      }
    } catch (e) { /* no caret to place: where the browser put it */ }
  }

  function waitCheck(specJson) {
    var s;
    try { s = typeof specJson === 'string' ? JSON.parse(specJson) : specJson; } catch (e) { s = null; }
    if (!s || typeof s !== 'object') return fail('waitCheck: malformed spec');
    if (typeof s.text === 'string') return J({ ok: fold(pageText()).indexOf(fold(s.text)) >= 0 });
    if (typeof s.url === 'string') return J({ ok: location.href.indexOf(s.url) >= 0 });
    if (s.load === 'domcontentloaded') return J({ ok: document.readyState !== 'loading' });
    if (s.load === 'load') return J({ ok: document.readyState === 'complete' });
    return fail('waitCheck: give "text", "url" or "load"');
  }

