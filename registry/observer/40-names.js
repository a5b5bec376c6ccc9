  /* ---- accessible names -------------------------------------------------- */

  var NAME_FROM_CONTENT = {
    button: 1, cell: 1, checkbox: 1, columnheader: 1, gridcell: 1, heading: 1, link: 1,
    menuitem: 1, menuitemcheckbox: 1, menuitemradio: 1, option: 1, radio: 1, row: 1,
    rowheader: 1, switch: 1, tab: 1, tooltip: 1, treeitem: 1, DisclosureTriangle: 1,
    LabelText: 1, Legend: 1, Figcaption: 1, sectionheader: 0, term: 1,
    suggestion: 1, comment: 0
  };

  function isControlRole(r) {
    return r === 'textbox' || r === 'searchbox' || r === 'combobox' || r === 'listbox' ||
      r === 'slider' || r === 'spinbutton' || r === 'progressbar' || r === 'scrollbar' ||
      r === 'meter';
  }

  /*
   * The document's ::before/::after rules as one selector list (their
   * subjects), so most elements skip two computed-style lookups. A sheet we
   * cannot read makes every element a candidate.
   */
  function buildPseudoSel() {
    var sels = [];
    var probe = document.createDocumentFragment();
    function scan(rules, depth) {
      if (depth > 16) return false;
      for (var i = 0; i < rules.length; i++) {
        var r = rules[i];
        /* @import: the imported sheet's rules count as the importer's */
        if (r.type === 3) {
          var ir = r.styleSheet ? rulesOf(r.styleSheet) : NO_RULES;
          if (ir === null || !scan(ir, depth + 1)) return false;
          continue;
        }
        /* @media, @supports and the like: their rules count */
        if (r.type !== 1 && r.cssRules && r.cssRules.length && !r.selectorText) {
          if (!scan(r.cssRules, depth + 1)) return false;
          continue;
        }
        /* only a rule that declares content adds text; asked before the
           selector, whose first read serializes it (about 5 us a rule, 12 ms
           of a first observe on a page of 1,445 rules) */
        if (!r.style || !r.style.getPropertyValue('content')) continue;
        var st = r.selectorText;
        if (!st || st.indexOf(':') < 0 || !/:(before|after)/i.test(st)) continue;
        var parts = st.split(',');
        for (var j = 0; j < parts.length; j++) {
          if (!/:(before|after)/i.test(parts[j])) continue;
          var sub = parts[j].replace(/::?(before|after)/ig, '').trim() || '*';
          try { probe.querySelector(sub); sels.push(sub); } catch (e) { /* unsupported: skip */ }
        }
      }
      return true;
    }
    var sheets = document.styleSheets;
    for (var i = 0; i < sheets.length; i++) {
      var rules = rulesOf(sheets[i]);
      if (rules === null || !scan(rules, 0)) return null;
    }
    if (document.adoptedStyleSheets && document.adoptedStyleSheets.length) return null;
    return sels.length ? sels.join(',') : '';
  }

  function mayHavePseudo(el) {
    if (el.ownerDocument !== document || el.getRootNode() !== document) return true;
    if (pseudoSel === undefined) {
      /* Scanning every style rule costs milliseconds on a large site's CSS:
         keep the answer while the sheets keep their shape. */
      var key = sheetsNow !== null ? sheetsNow : sheetsKey(document);
      if (pseudoMemo.key !== key) pseudoMemo = { key: key, sel: buildPseudoSel() };
      pseudoSel = pseudoMemo.sel;
    }
    if (pseudoSel === null) return true;
    if (pseudoSel === '') return false;
    try { return el.matches(pseudoSel); } catch (e) { return true; }
  }

  function pseudoText(el, which) {
    var pc = pseudoCache ? pseudoCache.get(el) : undefined;
    if (pc === undefined) {
      pc = mayHavePseudo(el) ? [pseudoTextRaw(el, '::before'), pseudoTextRaw(el, '::after')] : ['', ''];
      if (pseudoCache) pseudoCache.set(el, pc);
    }
    return which === '::before' ? pc[0] : pc[1];
  }
  function pseudoTextRaw(el, which) {
    inc.stats.pseudo++;
    var w = el.ownerDocument.defaultView || window;
    var s = w.getComputedStyle(el, which);
    var c = s.content;
    if (!c || c === 'none' || c === 'normal') return '';
    var d = s.display;
    if (d === 'none') return '';
    /* alt text after a slash wins */
    var out = '';
    var re = /"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|attr\(\s*([^)\s]+)\s*\)|\/|url\([^)]*\)|[a-z-]+\([^)]*\)|\S+/g;
    var m, parts = [], alt = null, afterSlash = false;
    while ((m = re.exec(c))) {
      var t = null;
      if (m[0] === '/') { afterSlash = true; alt = ''; continue; }
      if (m[1] !== undefined) t = m[1].replace(/\\([0-9a-fA-F]{1,6}) ?/g, function (_, h) {
        return String.fromCodePoint(parseInt(h, 16));
      }).replace(/\\(.)/g, '$1');
      else if (m[2] !== undefined) t = m[2].replace(/\\(.)/g, '$1');
      else if (m[3] !== undefined) t = el.getAttribute(m[3]) || '';
      if (t === null) continue;
      if (afterSlash) alt += t; else parts.push(t);
    }
    out = alt !== null ? alt : parts.join('');
    if (out && d !== 'inline') out = ' ' + out + ' ';
    return out;
  }

  function transformText(t, el) {
    var tt = style(el).textTransform;
    if (!tt || tt === 'none') return t;
    if (tt === 'uppercase') return t.toUpperCase();
    if (tt === 'lowercase') return t.toLowerCase();
    if (tt === 'capitalize') return t.replace(/(^|[\s\u00a0(\[{"'-])(\S)/g, function (_, a, b) { return a + b.toUpperCase(); });
    return t;
  }

  function visHidden(el) {
    var v = style(el).visibility;
    return v === 'hidden' || v === 'collapse';
  }

  function isInlineDisplay(el) {
    var d = style(el).display;
    return d === 'inline' || d === 'contents' || d === 'ruby' || d === 'inline flow';
  }

  function idRefs(el, a) {
    var v = attr(el, a);
    if (!v) return [];
    var root = el.getRootNode();
    var ids = v.trim().split(/\s+/), out = [];
    for (var i = 0; i < ids.length; i++) {
      if (!ids[i]) continue;
      var t = root.getElementById ? root.getElementById(ids[i]) : null;
      if (t) out.push(t);
      if (depRec) { depRec.ids.push(ids[i]); if (t) depRec.els.push(t); }
    }
    return out;
  }

  function controlValue(el, role) {
    var tag = lower(el);
    if (role === 'textbox' || role === 'searchbox') {
      if (tag === 'input' || tag === 'textarea') return el.value || '';
      return textOfContent(el);
    }
    if (role === 'combobox' || role === 'listbox') {
      if (tag === 'select') {
        var out = [];
        for (var i = 0; i < el.options.length; i++) {
          var o = el.options[i];
          if (o.selected) out.push(optionText(o));
          if (role === 'combobox' && o.selected) break;
        }
        return out.join(' ');
      }
      if (tag === 'input' || tag === 'textarea') return el.value || '';
      /* ARIA listbox/combobox: the selected options */
      var sel = Array.prototype.slice.call(el.querySelectorAll('[role="option"][aria-selected="true"]'));
      var ow = idRefs(el, 'aria-owns');
      for (var q = 0; q < ow.length; q++) {
        if (ow[q].matches('[role="option"][aria-selected="true"]')) sel.push(ow[q]);
        sel = sel.concat(Array.prototype.slice.call(ow[q].querySelectorAll('[role="option"][aria-selected="true"]')));
      }
      if (sel.length) {
        var r = [];
        for (var j = 0; j < sel.length; j++) r.push(computeName(sel[j], newCtx(sel[j])));
        return r.join(' ');
      }
      if (role === 'combobox') {
        var inp = el.querySelector('input,textarea');
        if (inp) return inp.value || '';
        return textOfContent(el);
      }
      return '';
    }
    /* ranges */
    var vt = attr(el, 'aria-valuetext');
    if (vt !== null && vt.trim()) return vt;
    var vn = attr(el, 'aria-valuenow');
    if (vn !== null && vn.trim()) return vn.trim();
    if (tag === 'input' || tag === 'meter' || tag === 'progress') return String(el.value);
    return '';
  }

  function optionText(o) {
    var l = attr(o, 'label');
    if (l !== null && l.trim()) return fold(l);
    return fold(o.text || '');
  }

  function newCtx(root) {
    return { visited: new Set(), root: root, inLabelledBy: false, includeHidden: false, recursing: false };
  }

  /* The text alternative of el (AccName 1.2 in Blink's order). */
  function computeName(el, ctx) {
    var n = textAlt(el, ctx, false);
    return fold(n);
  }

  function textAlt(el, ctx, recursive) {
    if (ctx.visited.has(el)) return '';
    /* 2A: hidden and not part of a labelledby traversal rooted at a hidden node */
    if (recursive && !ctx.includeHidden && isHiddenForName(el)) return '';
    ctx.visited.add(el);
    var role = roleOf(el);
    var tag = lower(el);

    /* 2B: aria-labelledby */
    if (!ctx.inLabelledBy) {
      var refs = idRefs(el, 'aria-labelledby');
      if (refs.length) {
        var parts = [];
        for (var i = 0; i < refs.length; i++) {
          var r = refs[i];
          var sub = { visited: ctx.visited, root: ctx.root, inLabelledBy: true,
                      includeHidden: ctx.includeHidden || isHiddenDeep(r), recursing: false };
          if (r === el) {
            /* a self reference reads the element's own label, not its content */
            var own = attr(el, 'aria-label');
            if (own && own.trim()) { parts.push(own.trim()); continue; }
            ctx.visited.delete(el);
            var t0 = textAlt(el, sub, false);
            ctx.visited.add(el);
            parts.push(t0);
            continue;
          }
          sub.visited.delete(r);
          parts.push(textAlt(r, sub, false));
        }
        var joined = fold(parts.join(' '));
        if (joined) return joined;
      }
    }

    /* 2C/2E: an embedded control inside a name reads its value */
    if ((recursive || ctx.inLabelledBy) && el !== ctx.root) {
      if (isControlRole(role)) return controlValue(el, role);
      if (role === 'menu' && recursive) return '';
    }
    if (tag === 'slot') return contentText(el, ctx);

    /* 2D: aria-label */
    var al = attr(el, 'aria-label');
    if (al && al.trim()) return al;

    /* presentational roles do not take native names */
    var ws = '';
    var isPres = role === 'none' && (explicitRole(el) === 'none' || explicitRole(el) === 'presentation');

    /* an image with empty alt has no name */
    if (tag === 'img' && attr(el, 'alt') === '') return '';

    /* 2E: host language label */
    if (!isPres) {
      var nat = nativeName(el, tag, role, ctx);
      if (nat !== null && fold(nat)) return nat;
    }

    /* 2F: name from content */
    if (recursive || ctx.inLabelledBy || NAME_FROM_CONTENT[role]) {
      if (!(tag === 'select' || tag === 'input' || tag === 'textarea' || tag === 'img')) {
        var c = contentText(el, ctx);
        if (fold(c)) return c;
        if (recursive && c) ws = ' ';
      }
    }

    /* 2I: tooltip (not for presentational or generic elements) */
    var ti = attr(el, 'title');
    if (ti && ti.trim() && !isPres && !(role === 'generic' && !recursive) && role !== 'none') return ti;
    if (tag === 'input' || tag === 'textarea') {
      var ph = attr(el, 'placeholder');
      if (ph && ph.trim()) return ph;
    }
    var aph = attr(el, 'aria-placeholder');
    if (aph && aph.trim() && (role === 'textbox' || role === 'searchbox' || role === 'combobox')) return aph;
    return ws;
  }

  function labelsName(el, ctx) {
    var labels = labelsOf(el);
    if (depRec) {
      /* a label[for] finds el by its id; a label around it is a source */
      if (el.id) depRec.ids.push(el.id);
      if (labels) for (var li = 0; li < labels.length; li++) depRec.els.push(labels[li]);
    }
    if (!labels || !labels.length) return null;
    var parts = [];
    for (var i = 0; i < labels.length; i++) {
      var lab = labels[i];
      if (ctx.visited.has(lab)) continue;
      var sub = { visited: ctx.visited, root: ctx.root, inLabelledBy: ctx.inLabelledBy,
                  includeHidden: ctx.includeHidden, recursing: true };
      /* a label's own aria-labelledby/aria-label count */
      var t = textAlt(lab, sub, true);
      if (!fold(t)) {
        /* a hidden label still names its control */
        ctx.visited.delete(lab);
        sub.includeHidden = true;
        t = textAlt(lab, sub, true);
      }
      parts.push(t);
    }
    var s = fold(parts.join(' '));
    return s ? s : null;
  }

  function nativeName(el, tag, role, ctx) {
    var s;
    if (tag === 'input') {
      var type = (el.type || 'text').toLowerCase();
      if (type === 'hidden') return '';
      if (type === 'button' || type === 'submit' || type === 'reset') {
        var lb0 = labelsName(el, ctx);
        if (lb0) return lb0;
        /* Chromium: a value attribute, even empty, replaces the default label */
        if (hasAttr(el, 'value')) return attr(el, 'value');
        if (type === 'submit') return 'Submit';
        if (type === 'reset') return 'Reset';
        return null;
      }
      if (type === 'image') {
        var lbi = labelsName(el, ctx);
        if (lbi) return lbi;
        var a = attr(el, 'alt');
        if (a !== null && a.trim()) return a;
        var vv = attr(el, 'value');
        if (vv !== null && vv.trim()) return vv;
        var tt = attr(el, 'title');
        if (tt !== null && tt.trim()) return tt;
        return 'Submit';
      }
      if (type === 'file') {
        var lbf = labelsName(el, ctx);
        if (lbf) return lbf;
        return 'Choose File';
      }
      s = labelsName(el, ctx);
      if (s) return s;
      return null;
    }
    if (tag === 'textarea' || tag === 'select' || tag === 'button' || tag === 'meter' ||
        tag === 'output' || tag === 'progress') {
      s = labelsName(el, ctx);
      if (s) return s;
      return null;
    }
    if (tag === 'img' || tag === 'area') {
      var alt = attr(el, 'alt');
      if (alt !== null && alt.trim()) return alt;
      return null;
    }
    if (tag === 'fieldset') {
      for (var c = el.firstElementChild; c; c = c.nextElementSibling)
        if (lower(c) === 'legend') {
          if (!ctx.visited.has(c)) {
            var sub = childCtx(ctx);
            var t = textAlt(c, sub, true);
            if (fold(t)) return t;
          }
          break;
        }
      return null;
    }
    /* figure: Chromium 156 does not name a figure from its figcaption */
    if (tag === 'table') {
      var cap = el.caption;
      if (cap && !ctx.visited.has(cap)) {
        var t3 = textAlt(cap, childCtx(ctx), true);
        if (fold(t3)) return t3;
      }
      var sm = attr(el, 'summary');
      if (sm && sm.trim()) return sm;
      return null;
    }
    if (tag === 'optgroup') {
      var l = attr(el, 'label');
      return l;
    }
    if (tag === 'option') {
      var ol = attr(el, 'label');
      if (ol !== null && ol.trim()) return ol;
      return null;
    }
    if (tag === 'svg') {
      for (var st = el.firstElementChild; st; st = st.nextElementSibling)
        if (lower(st) === 'title') return st.textContent;
      return null;
    }
    if (tag === 'details') {
      return null;
    }
    return null;
  }

  function childCtx(ctx) {
    return { visited: ctx.visited, root: ctx.root, inLabelledBy: ctx.inLabelledBy,
             includeHidden: ctx.includeHidden, recursing: true };
  }

  /* Name from content: pseudo elements, children (flat tree), text nodes. */
  function contentText(el, ctx) {
    var out = pseudoText(el, '::before');
    var kids = flatChildren(el);
    var owned = idRefs(el, 'aria-owns');
    if (owned.length) kids = Array.prototype.slice.call(kids).concat(owned);
    var textVisible = ctx.includeHidden || !visHidden(el);
    for (var i = 0; i < kids.length; i++) {
      var k = kids[i];
      if (k.nodeType === 3) {
        if (textVisible) out += transformText(k.data, el);
        continue;
      }
      if (k.nodeType !== 1) continue;
      var kt = lower(k);
      if (kt === 'script' || kt === 'style' || kt === 'template' || kt === 'noscript') continue;
      if (kt === 'br') { out += '\n'; continue; }
      /* Chromium leaves a figure out of an ancestor's name from content (a
         link around a thumbnail figure and its caption is named by the caption) */
      if (!ctx.inLabelledBy && roleOf(k) === 'figure') continue;
      if (!ctx.includeHidden && isHiddenForName(k)) {
        /* visibility:hidden parents can have visible children */
        var ks = style(k);
        if (ks.display === 'none' || attr(k, 'aria-hidden') === 'true') continue;
        var inner = contentText(k, childCtx(ctx));
        if (fold(inner)) out += inner;
        continue;
      }
      var t = textAlt(k, childCtx(ctx), true);
      if (!isInlineDisplay(k)) out += ' ' + t + ' ';
      else out += t;
    }
    out += pseudoText(el, '::after');
    return out;
  }

  function flatChildren(el) {
    if (el.shadowRoot) return Array.prototype.slice.call(el.shadowRoot.childNodes);
    if (lower(el) === 'slot') {
      var an = el.assignedNodes();
      if (an.length) return an;
    }
    if (lower(el) === 'template') return [];
    return el.childNodes;
  }

  function textOfContent(el) {
    return fold(el.textContent || '');
  }

  function nameOf(el) {
    return computeName(el, newCtx(el));
  }

  function descriptionOf(el) {
    var refs = idRefs(el, 'aria-describedby');
    if (refs.length) {
      var parts = [];
      for (var i = 0; i < refs.length; i++) {
        var ctx = newCtx(el);
        ctx.inLabelledBy = true;
        ctx.includeHidden = isHiddenDeep(refs[i]);
        parts.push(textAlt(refs[i], ctx, false));
      }
      var s = fold(parts.join(' '));
      if (s) return s;
    }
    var d = attr(el, 'aria-description');
    if (d && d.trim()) return fold(d);
    var t = attr(el, 'title');
    if (t && t.trim() && fold(t) !== nameOf(el)) return fold(t);
    return '';
  }

