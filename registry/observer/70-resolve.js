  /* ---- resolve ---------------------------------------------------------- */

  var MAX_MATCHES = 1000;
  var TEXT_SKIP = table({ script: 1, style: 1, template: 1, noscript: 1, head: 1, title: 1, meta: 1,
    link: 1, base: 1, datalist: 1, param: 1, source: 1, track: 1, select: 1, textarea: 1,
    input: 1, iframe: 1, frame: 1, object: 1, embed: 1, desc: 1, metadata: 1, defs: 1, symbol: 1 });
  var WS = /[ \t\n\r\f\u00a0]/;
  var BUTTONISH = table({ submit: 1, button: 1, reset: 1 });
  var LABEL_ROLES = { textbox: 1, searchbox: 1, combobox: 1, listbox: 1, checkbox: 1, radio: 1,
    switch: 1, slider: 1, spinbutton: 1, menuitemcheckbox: 1, menuitemradio: 1 };

  function resolve(specJson) {
    var spec;
    try { spec = typeof specJson === 'string' ? JSON.parse(specJson) : specJson; } catch (e) { spec = null; }
    if (!spec || typeof spec !== 'object') return fail('resolve: malformed spec');
    var kind = spec.kind, v = spec.value, nm = spec.name, sub = !!spec.substring;
    if (typeof v !== 'string') return fail('resolve: value must be a string');
    if (nm !== null && nm !== undefined && typeof nm !== 'string') return fail('resolve: name must be a string or null');
    if (nm === undefined) nm = null;
    var found;
    switch (kind) {
      case 'css': found = byCss(v); break;
      case 'xpath': found = byXpath(v); break;
      case 'role': found = byRole(v, nm, sub); break;
      case 'text': found = byText(v, sub); break;
      case 'label': found = byLabel(v, sub); break;
      case 'placeholder': case 'alt': case 'title': found = byAttr(kind, v, sub); break;
      case 'testid': case 'heal_testid': found = byExact('data-testid', v); break;
      case 'heal_id': found = byExact('id', v); break;
      case 'heal_name': found = byExact('name', v); break;
      case 'heal_aria_role': found = byAriaRole(v, nm); break;
      default: return fail('resolve: unknown kind "' + kind + '"');
    }
    if (typeof found === 'string') return found; /* an error */
    var out = [];
    var seen = new Set();
    for (var i = 0; i < found.length && out.length < MAX_MATCHES; i++) {
      if (seen.has(found[i])) continue;
      seen.add(found[i]);
      out.push(indexOfLast(found[i]));
    }
    var count = out.length < MAX_MATCHES ? out.length : new Set(found).size;
    return J({ matches: out, count: count });
  }

  function byCss(sel) {
    try { document.querySelector(sel); } catch (e) {
      return fail('invalid CSS selector: ' + sel);
    }
    var all = [], roots = [];
    deepElements(all, roots);
    if (roots.length === 1) return Array.prototype.slice.call(document.querySelectorAll(sel));
    var hits = new Set();
    for (var r = 0; r < roots.length; r++) {
      var l;
      try { l = roots[r].querySelectorAll(sel); } catch (e) { continue; }
      for (var k = 0; k < l.length; k++) hits.add(l[k]);
    }
    var out = [];
    for (var i = 0; i < all.length && hits.size; i++)
      if (hits.has(all[i])) out.push(all[i]);
    return out;
  }

  function byXpath(x) {
    var res;
    try {
      res = document.evaluate(x, document, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
    } catch (e) {
      return fail('invalid XPath: ' + x);
    }
    var out = [];
    for (var i = 0; i < res.snapshotLength; i++) {
      var n = res.snapshotItem(i);
      if (n && n.nodeType === 1) out.push(n);
    }
    return out;
  }

  function textMatch(s, want, sub) {
    if (s === null || s === undefined) return false;
    var f = fold(String(s));
    return sub ? f.indexOf(want) >= 0 : f === want;
  }

  var ROLE_ALIAS = table({ img: 'image', directory: 'list', presentation: 'none' });

  function byRole(v, nm, sub) {
    var want = fold(v).toLowerCase();
    if (!want) return fail('role: needs a role');
    if (ROLE_ALIAS[want]) want = ROLE_ALIAS[want];
    var wname = nm === null ? null : fold(nm);
    var all = deepElements([]);
    var out = [];
    for (var i = 0; i < all.length; i++) {
      var e = all[i];
      var r = obsRole(e);
      if (r.toLowerCase() !== want) continue;
      if (!axVisible(e)) continue;
      if (wname !== null) {
        var n = r === 'option' ? optionNameFast(e) : nameOf(e);
        if (sub ? n.indexOf(wname) < 0 : (n !== wname && !(n.length > 200 && clip(n, 200) === wname)))
          continue;
      }
      out.push(e);
    }
    return out;
  }

  function byText(v, sub) {
    var want = fold(v);
    if (!want) return fail('text: needs some text');
    var hits = [];
    var order = 0;
    var docs = [document];
    /*
     * Pruning: a subtree whose textContent lacks the longest word of the
     * wanted text (any case: text-transform) cannot hold a match; its text
     * still counts for its ancestors, approximated by its textContent. Shadow
     * hosts, slots and button-like inputs carry text that textContent does not
     * show, so their ancestors are always walked.
     */
    var words = want.split(' '), tok = '';
    for (var w = 0; w < words.length; w++) if (words[w].length > tok.length) tok = words[w];
    var tokRe = new RegExp(tok.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&'), 'i');
    var keep = new Set(), roots = [];
    var all = deepElements([], roots);
    for (var a = 0; a < all.length; a++) {
      var e = all[a], lt = e.localName;
      if (e.shadowRoot || lt === 'slot' || (lt === 'input' && BUTTONISH[(e.type || '').toLowerCase()]))
        for (var x = e; x && !keep.has(x); x = composedParent(x)) keep.add(x);
    }
    /* the ancestors of every text node holding the word */
    var found = false;
    for (var ri = 0; ri < roots.length; ri++) {
      var R = roots[ri];
      var tw = (R.nodeType === 9 ? R : R.ownerDocument).createTreeWalker(R, 4 /* SHOW_TEXT */);
      for (var tn = tw.nextNode(); tn; tn = tw.nextNode()) {
        if (!tokRe.test(tn.data)) continue;
        found = true;
        var y = tn.assignedSlot || tn.parentNode;
        if (y && y.nodeType === 11) y = y.host;
        for (; y && y.nodeType === 1 && !keep.has(y); y = composedParent(y)) keep.add(y);
      }
    }
    /* the word split across text nodes (<b>Sub</b>mit) and nowhere whole: no pruning */
    var noPrune = false;
    if (!found) {
      for (var rj = 0; rj < roots.length && !noPrune; rj++) {
        var rr = roots[rj].nodeType === 9 ? roots[rj].documentElement : roots[rj];
        if (rr && tokRe.test(rr.textContent || '')) noPrune = true;
      }
    }

    /*
     * Folded text built piece by piece, so that no ancestor folds its whole
     * subtree again: s has no leading or trailing space, lead/trail say
     * whether the raw text started or ended with white space.
     */
    function Tb() { this.s = ''; this.lead = false; this.trail = false; this.any = false; }
    Tb.prototype.raw = function (t) {
      if (!t) return;
      var f = fold(t);
      var l = WS.test(t.charAt(0)), tr = WS.test(t.charAt(t.length - 1));
      this.piece(f, l, tr);
    };
    Tb.prototype.piece = function (f, l, tr) {
      if (!f) {
        if (l || tr) { if (this.any) this.trail = true; else this.lead = true; }
        return;
      }
      if (!this.any) { this.lead = this.lead || l; this.s = f; this.any = true; }
      else { this.s += (this.trail || l) ? ' ' + f : f; }
      this.trail = tr;
    };
    Tb.prototype.space = function () { if (this.any) this.trail = true; else this.lead = true; };

    /* returns [text, text as shown (text-transform), text matches]; records matches */
    function walk(el, visible) {
      var pre = order++;
      var s = style(el);
      var selfVisible = visible && !(s.visibility === 'hidden' || s.visibility === 'collapse');
      var raw = new Tb(), shown = new Tb(), tf = false;
      var kids = s.contentVisibility === 'hidden' ? [] : flatChildren(el);
      var kidMatched = false;
      var tt = s.textTransform;
      var trans = tt && tt !== 'none';
      for (var i = 0; i < kids.length; i++) {
        var k = kids[i];
        if (k.nodeType === 3) {
          if (!selfVisible) continue;
          raw.raw(k.data);
          if (trans) { tf = true; shown.raw(transformText(k.data, el)); } else shown.raw(k.data);
          continue;
        }
        if (k.nodeType !== 1) continue;
        var kt = lower(k);
        if (kt === 'br') { raw.space(); shown.space(); continue; }
        if (isFrameTag(kt)) {
          var d = frameDoc(k);
          if (d && style(k).display !== 'none') docs.push(d);
          continue;
        }
        if (kt === 'input') {
          var ty = (k.type || '').toLowerCase();
          if (BUTTONISH[ty] && style(k).display !== 'none') {
            var iv = hasAttr(k, 'value') ? attr(k, 'value') : ty === 'submit' ? 'Submit' : ty === 'reset' ? 'Reset' : '';
            var ivis = visible && !visHidden(k);
            if (ivis && iv && textMatch(iv, want, sub)) { hits.push([order++, k]); kidMatched = true; }
            if (ivis) { var fv = fold(iv); raw.piece(fv, true, true); shown.piece(fv, true, true); }
          }
          continue;
        }
        if (TEXT_SKIP[kt]) continue;
        var ks = style(k);
        if (ks.display === 'none') continue;
        var block = !(ks.display.lastIndexOf('inline', 0) === 0 || ks.display === 'contents');
        var r = null;
        if (!noPrune && !keep.has(k)) {
          /* cannot hold a match: its rendered text for the ancestors */
          var it = renderedText(k);
          var ft = fold(it);
          r = [ft, ft, false, block || WS.test(it.charAt(0)), block || WS.test(it.charAt(it.length - 1))];
        }
        if (!r) {
          r = walk(k, visible);
          if (r[2]) kidMatched = true;
          if (block) { r[3] = true; r[4] = true; }
        }
        raw.piece(r[0], r[3], r[4]);
        shown.piece(r[1], r[3], r[4]);
        if (r[1] !== r[0]) tf = true;
      }
      var fr = raw.s, fs = tf ? shown.s : fr;
      var m;
      if (kidMatched && sub) m = true;
      else if (fr.length < want.length && fs.length < want.length) m = false;
      else m = sub ? (fr.indexOf(want) >= 0 || (tf && fs.indexOf(want) >= 0)) : (fr === want || (tf && fs === want));
      /* innermost: an element whose child matches is not a match itself */
      if (m && selfVisible && !kidMatched) hits.push([pre, el]);
      return [fr, fs, m, raw.lead, raw.trail];
    }

    for (var di = 0; di < docs.length; di++) {
      var d = docs[di];
      var root = rootOf(d);
      if (!root) continue;
      /* a frame's text counts only when the frame is shown */
      var f = d === document ? null : frameOfDoc(d);
      if (f && !visVisible(f)) continue;
      if (style(root).display === 'none') continue;
      if (!noPrune && !keep.has(root)) continue;
      walk(root, true);
    }
    if (!hits.length) return [];
    hits.sort(function (a, b) { return a[0] - b[0]; });
    var els = hits.map(function (h) { return h[1]; });
    return sortDeep(els);
  }

  /* the text a person sees in el (innerText; for SVG its <text> elements) */
  function renderedText(el) {
    var t = el.innerText;
    if (typeof t === 'string') return t;
    var ts = el.querySelectorAll('text');
    var out = '';
    for (var i = 0; i < ts.length; i++) out += ' ' + ts[i].textContent;
    return out;
  }

  /* sort elements into deep document order when they span several roots */
  function sortDeep(els) {
    if (els.length < 2) return els;
    var all = deepElements([]);
    var pos = new Map();
    for (var i = 0; i < all.length; i++) pos.set(all[i], i);
    return els.slice().sort(function (a, b) {
      var x = pos.get(a), y = pos.get(b);
      return (x === undefined ? 1e12 : x) - (y === undefined ? 1e12 : y);
    });
  }

  function labelTexts(el) {
    var out = [];
    var al = attr(el, 'aria-label');
    if (al && al.trim()) out.push(al);
    var refs = idRefs(el, 'aria-labelledby');
    if (refs.length) {
      var parts = [];
      for (var i = 0; i < refs.length; i++) {
        var ctx = newCtx(el);
        ctx.inLabelledBy = true;
        ctx.includeHidden = isHiddenDeep(refs[i]);
        parts.push(textAlt(refs[i], ctx, false));
      }
      out.push(parts.join(' '));
    }
    var labels = el.labels;
    if (labels) {
      for (var j = 0; j < labels.length; j++) {
        var l = labels[j];
        out.push(l.innerText !== undefined ? l.innerText : l.textContent);
        /* the label's accessible text (pseudo content, nested control values) */
        out.push(textAlt(l, newCtx(l), true));
      }
    }
    return out;
  }

  function isLabelCandidate(e) {
    var t = e.localName;
    if (t === 'input') return (e.type || '').toLowerCase() !== 'hidden';
    if (t === 'textarea' || t === 'select') return true;
    if (hasAttr(e, 'role')) return !!LABEL_ROLES[roleOf(e)];
    return isEditRoot(e);
  }

  function byLabel(v, sub) {
    var want = fold(v);
    if (!want) return fail('label: needs some text');
    var all = deepElements([]);
    var out = [];
    for (var i = 0; i < all.length; i++) {
      var e = all[i];
      if (!isLabelCandidate(e)) continue;
      var ts = labelTexts(e), ok = false;
      for (var k = 0; k < ts.length && !ok; k++) ok = textMatch(ts[k], want, sub);
      if (ok && visVisible(e)) out.push(e);
    }
    return out;
  }

  function byAttr(a, v, sub) {
    var want = fold(v);
    var all = deepElements([]);
    var out = [];
    for (var i = 0; i < all.length; i++) {
      var e = all[i];
      var x = e.getAttribute(a);
      if (x === null || !textMatch(x, want, sub)) continue;
      if (visVisible(e)) out.push(e);
    }
    return out;
  }

  function byExact(a, v) {
    var all = deepElements([]);
    var out = [];
    for (var i = 0; i < all.length; i++)
      if (all[i].getAttribute(a) === v) out.push(all[i]);
    return out;
  }

  function byAriaRole(v, role) {
    var all = deepElements([]);
    var out = [];
    for (var i = 0; i < all.length; i++) {
      var e = all[i];
      if (e.getAttribute('aria-label') !== v) continue;
      if (role !== null && obsRole(e) !== role) continue;
      out.push(e);
    }
    return out;
  }

