/*
 * observer.js - refgate's page-side observer. Evaluating this file installs
 * globalThis.__refgate (once per version) and evaluates to true.
 *
 *   __refgate.describe(selector) -> JSON {role, name, description} or "null"
 *   __refgate.observe(optsJson)  -> JSON {url, title, truncated, count, nodes}
 *   __refgate.last               -> the elements of the last observe, by "i"
 *
 * Roles and names follow what Chromium's accessibility tree reports: the
 * HTML-AAM mapping in Chromium's vocabulary and accessible names after
 * AccName 1.2 as Blink implements it. No modules, no dependencies.
 */
(function () {
  'use strict';
  var VERSION = 1;
  var G = globalThis;
  if (G.__refgate && G.__refgate.version === VERSION) return true;

  /* ---- per-call caches --------------------------------------------------- */

  var styleCache = null; /* Map element -> CSSStyleDeclaration */
  var pseudoCache = null; /* Map element -> [before, after] text */
  var nthCache = null;    /* Map parent -> Map child -> ":nth-of-type(k)" or "" */
  var activeEl = null;
  var pseudoSel;          /* selector of elements that may have ::before/::after text, null: any */
  var pathCache = null;
  var labelIndex = null;  /* Map control -> [label] for the main document */

  /* el.labels builds a live list per element: one pass over the labels instead */
  function labelsOf(el) {
    if (!styleCache || el.ownerDocument !== document || el.getRootNode() !== document) return el.labels;
    if (labelIndex === null) {
      labelIndex = new Map();
      var all = document.getElementsByTagName('label');
      for (var i = 0; i < all.length; i++) {
        var c = all[i].control;
        if (!c) continue;
        var l = labelIndex.get(c);
        if (l) l.push(all[i]); else labelIndex.set(c, [all[i]]);
      }
    }
    return labelIndex.get(el) || null;
  }

  function beginCall() {
    styleCache = new Map();
    pseudoCache = new Map();
    nthCache = new Map();
    activeEl = deepActive(document);
    pseudoSel = undefined;
    pathCache = new Map();
    labelIndex = null;
    roleCache = new Map();
  }
  function endCall() {
    styleCache = pseudoCache = nthCache = roleCache = pathCache = labelIndex = null;
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

  function fold(s) {
    return s.replace(/[ \t\n\r\f\u00a0]+/g, ' ').replace(/^ +| +$/g, '');
  }
  function clip(s, n) {
    return s.length > n ? s.slice(0, n) : s;
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

  /* ---- roles ------------------------------------------------------------- */

  /* ARIA roles Chromium knows, with the name its tree reports. */
  var ARIA_ROLES = {};
  ('alert alertdialog application article banner blockquote button caption cell checkbox code ' +
   'columnheader combobox comment complementary contentinfo definition deletion dialog document ' +
   'emphasis feed figure form generic grid gridcell group heading insertion link list listbox ' +
   'listitem log main mark marquee math menu menubar menuitem menuitemcheckbox menuitemradio meter ' +
   'navigation none note option paragraph presentation progressbar radio radiogroup region row ' +
   'rowgroup rowheader scrollbar search searchbox separator slider spinbutton status strong ' +
   'subscript suggestion superscript switch tab table tablist tabpanel term textbox time timer ' +
   'toolbar tooltip tree treegrid treeitem image img directory sectionheader sectionfooter')
    .split(' ').forEach(function (r) { ARIA_ROLES[r] = r; });
  ARIA_ROLES.img = 'image';
  ARIA_ROLES.directory = 'list';

  var GLOBAL_ARIA = ['aria-label', 'aria-labelledby', 'aria-describedby', 'aria-details',
    'aria-controls', 'aria-owns', 'aria-live', 'aria-keyshortcuts', 'aria-roledescription',
    'aria-errormessage', 'aria-flowto', 'aria-haspopup', 'aria-busy', 'aria-relevant',
    'aria-atomic', 'aria-dropeffect', 'aria-grabbed', 'aria-invalid', 'aria-disabled'];

  function hasGlobalAria(el) {
    for (var i = 0; i < GLOBAL_ARIA.length; i++)
      if (hasAttr(el, GLOBAL_ARIA[i])) return true;
    return false;
  }

  function isFocusable(el) {
    if (el.disabled) return false;
    var t = attr(el, 'tabindex');
    if (t !== null && t !== '' && !isNaN(parseInt(t, 10))) return true;
    var tag = lower(el);
    if (tag === 'a' || tag === 'area') return hasAttr(el, 'href');
    if (tag === 'input') return el.type !== 'hidden';
    if (tag === 'button' || tag === 'select' || tag === 'textarea' || tag === 'iframe') return true;
    if (tag === 'summary') return !!(el.parentElement && lower(el.parentElement) === 'details' &&
                                     el.parentElement.querySelector('summary') === el);
    if (el.isContentEditable && (!el.parentElement || !el.parentElement.isContentEditable)) return true;
    return false;
  }

  function explicitRole(el) {
    var r = attr(el, 'role');
    if (!r) return null;
    var parts = r.trim().toLowerCase().split(/\s+/);
    for (var i = 0; i < parts.length; i++) {
      var p = parts[i];
      if (ARIA_ROLES.hasOwnProperty(p)) return ARIA_ROLES[p];
    }
    return null;
  }

  var SECTIONING = { article: 1, aside: 1, main: 1, nav: 1, section: 1 };
  var SECTIONING_ROLES = { article: 1, complementary: 1, main: 1, navigation: 1, region: 1 };

  function inSectioning(el) {
    for (var p = parentEl(el); p; p = parentEl(p)) {
      var t = lower(p);
      if (SECTIONING[t]) return true;
      var r = explicitRole(p);
      if (r && SECTIONING_ROLES[r]) return true;
      if (t === 'body') return false;
    }
    return false;
  }

  function parentEl(el) {
    if (el.assignedSlot) return el.assignedSlot;
    var p = el.parentNode;
    if (!p) return null;
    if (p.nodeType === 11) return p.host || null;
    return p.nodeType === 1 ? p : null;
  }

  function hasNameAttr(el) {
    var a = attr(el, 'aria-label');
    if (a && a.trim()) return true;
    var lb = attr(el, 'aria-labelledby');
    if (lb && lb.trim()) return true;
    var t = attr(el, 'title');
    return !!(t && t.trim());
  }

  var INPUT_ROLES = {
    button: 'button', submit: 'button', reset: 'button', image: 'button', file: 'button',
    checkbox: 'checkbox', radio: 'radio', range: 'slider', number: 'spinbutton',
    search: 'searchbox', color: 'ColorWell', date: 'Date', month: 'Date', week: 'Date',
    time: 'InputTime', 'datetime-local': 'DateTime', hidden: 'none'
  };

  function implicitRole(el) {
    var tag = lower(el);
    switch (tag) {
      case 'a': return hasAttr(el, 'href') ? 'link' : 'generic';
      case 'area': return hasAttr(el, 'href') ? 'link' : 'generic';
      case 'input': {
        var t = (attr(el, 'type') || 'text').toLowerCase();
        var r = INPUT_ROLES[t];
        if (hasAttr(el, 'list') && (r === undefined || r === 'searchbox')) return 'combobox';
        return r === undefined ? 'textbox' : r;
      }
      case 'textarea': return 'textbox';
      case 'select': return (el.multiple || el.size > 1) ? 'listbox' : 'combobox';
      case 'option': return 'option';
      case 'optgroup': return 'group';
      case 'button': return 'button';
      case 'img': {
        var alt = attr(el, 'alt');
        if (alt !== null && alt === '' && !hasNameAttr(el) && !isFocusable(el)) return 'none';
        return 'image';
      }
      case 'svg': return 'SvgRoot';
      case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6': return 'heading';
      case 'nav': return 'navigation';
      case 'main': return 'main';
      case 'aside': {
        if (!inSectioning(el) || hasNameAttr(el)) return 'complementary';
        return 'generic';
      }
      case 'header': return inSectioning(el) ? 'sectionheader' : 'banner';
      case 'footer': return inSectioning(el) ? 'sectionfooter' : 'contentinfo';
      case 'form': return 'form';
      case 'search': return 'search';
      case 'section': return hasNameAttr(el) ? 'region' : 'generic';
      case 'article': return 'article';
      case 'dialog': return 'dialog';
      case 'details': return 'group';
      case 'summary': {
        var d = el.parentElement;
        if (d && lower(d) === 'details' && d.querySelector(':scope > summary') === el) return 'DisclosureTriangle';
        return 'generic';
      }
      case 'fieldset': return 'group';
      case 'legend': return 'Legend';
      case 'figure': return 'figure';
      case 'figcaption': return 'Figcaption';
      case 'label': return 'LabelText';
      case 'ul': case 'ol': case 'menu': return 'list';
      case 'li': return 'listitem';
      case 'dl': return 'DescriptionList';
      case 'dt': return 'term';
      case 'dd': return 'definition';
      case 'dfn': return 'term';
      case 'table': return 'table';
      case 'caption': return 'caption';
      case 'thead': case 'tbody': case 'tfoot': return 'rowgroup';
      case 'tr': return 'row';
      case 'td': return 'cell';
      case 'th': {
        var sc = (attr(el, 'scope') || '').toLowerCase();
        if (sc === 'row' || sc === 'rowgroup') return 'rowheader';
        if (sc === 'col' || sc === 'colgroup') return 'columnheader';
        var tr = el.parentElement;
        if (tr && tr.parentElement && lower(tr.parentElement) === 'thead') return 'columnheader';
        /* a th with only th siblings heads columns, else rows */
        if (tr) {
          for (var c = tr.firstElementChild; c; c = c.nextElementSibling)
            if (lower(c) === 'td') return 'rowheader';
        }
        return 'columnheader';
      }
      case 'p': return 'paragraph';
      case 'hr': return 'separator';
      case 'blockquote': return 'blockquote';
      case 'code': return 'code';
      case 'em': return 'emphasis';
      case 'strong': return 'strong';
      case 'mark': return 'mark';
      case 'del': case 's': return 'deletion';
      case 'ins': return 'insertion';
      case 'sub': return 'subscript';
      case 'sup': return 'superscript';
      case 'time': return 'time';
      case 'meter': return 'meter';
      case 'progress': return 'progressbar';
      case 'output': return 'status';
      case 'address': case 'hgroup': return 'group';
      case 'abbr': return 'Abbr';
      case 'iframe': case 'frame': return 'Iframe';
      case 'video': return 'Video';
      case 'audio': return 'Audio';
      case 'canvas': return 'Canvas';
      case 'embed': case 'object': return 'PluginObject';
      case 'br': return 'LineBreak';
      case 'math': return 'MathMLMath';
      case 'body': case 'html': return 'none';
      case 'script': case 'style': case 'template': case 'head': case 'meta': case 'link':
      case 'title': case 'noscript': case 'base': case 'slot': case 'datalist': case 'param':
      case 'source': case 'track': case 'col': case 'colgroup': case 'wbr':
        return 'none';
      default: return 'generic';
    }
  }

  var roleCache = null;
  /* Chromium's role for el, "none" where its tree ignores the element. */
  function roleOf(el) {
    var r = roleCache ? roleCache.get(el) : undefined;
    if (r === undefined) {
      r = roleOfRaw(el);
      if (roleCache) roleCache.set(el, r);
    }
    return r;
  }
  function roleOfRaw(el) {
    var ex = explicitRole(el);
    var role;
    if (ex === 'none' || ex === 'presentation') {
      /* presentation loses to focus and global ARIA attributes */
      if (isFocusable(el) || hasGlobalAria(el)) role = implicitRole(el);
      else return 'none';
    } else if (ex) {
      role = ex;
      if (role === 'region' && !hasNameAttr(el)) role = 'generic';
      if (role === 'form' && !hasNameAttr(el) && lower(el) !== 'form') role = 'generic';
    } else {
      role = implicitRole(el);
    }
    if (role === 'generic' && !ex) {
      var tag = lower(el);
      if (tag === 'body' || tag === 'html') return 'none';
      /* inline generics without anything interesting are ignored */
      var d = style(el).display;
      if ((d === 'inline' || d === 'contents') && (el.attributes.length === 0 ||
          !isFocusable(el) && !hasGlobalAria(el) &&
          !(attr(el, 'title') || '').trim()))
        return 'none';
    }
    return role;
  }

  /* ---- hidden ------------------------------------------------------------ */

  function isHiddenSelf(el) {
    if (attr(el, 'aria-hidden') === 'true') return true;
    var s = style(el);
    if (s.display === 'none') return true;
    return false;
  }
  /* hidden for name computation: display none/aria-hidden on el or an ancestor, or visibility */
  function isHiddenDeep(el) {
    for (var p = el; p; p = parentEl(p)) {
      if (p.nodeType !== 1) break;
      if (isHiddenSelf(p)) return true;
      if (lower(p) === 'body') break;
    }
    var v = style(el).visibility;
    return v === 'hidden' || v === 'collapse';
  }
  function isHiddenForName(el) {
    if (attr(el, 'aria-hidden') === 'true') return true;
    var s = style(el);
    if (s.display === 'none') return true;
    var v = s.visibility;
    return v === 'hidden' || v === 'collapse';
  }

  /* ---- accessible names -------------------------------------------------- */

  var NAME_FROM_CONTENT = {
    button: 1, cell: 1, checkbox: 1, columnheader: 1, gridcell: 1, heading: 1, link: 1,
    menuitem: 1, menuitemcheckbox: 1, menuitemradio: 1, option: 1, radio: 1, row: 1,
    rowheader: 1, switch: 1, tab: 1, tooltip: 1, treeitem: 1, DisclosureTriangle: 1,
    LabelText: 1, Legend: 1, Figcaption: 1, sectionheader: 0, term: 1,
    suggestion: 1, comment: 0
  };

  /* Roles whose text never flows into an ancestor's name from content */
  var NO_CONTENT_RECURSE = {};

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
    function scan(rules) {
      for (var i = 0; i < rules.length; i++) {
        var r = rules[i];
        if (r.cssRules && r.cssRules.length && !r.selectorText) {
          if (!scan(r.cssRules)) return false;
          continue;
        }
        var st = r.selectorText;
        if (!st || st.indexOf(':') < 0 || !/:(before|after)/i.test(st)) continue;
        if (!r.style || !r.style.content || r.style.content === 'none' || r.style.content === 'normal') {
          if (!(r.style && r.style.getPropertyValue('content'))) continue;
        }
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
      var rules;
      try { rules = sheets[i].cssRules; } catch (e) { return null; }
      if (rules && !scan(rules)) return null;
    }
    if (document.adoptedStyleSheets && document.adoptedStyleSheets.length) return null;
    return sels.length ? sels.join(',') : '';
  }

  function mayHavePseudo(el) {
    if (el.ownerDocument !== document || el.getRootNode() !== document) return true;
    if (pseudoSel === undefined) pseudoSel = buildPseudoSel();
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

  /* ---- observe ----------------------------------------------------------- */

  var INTERACTIVE = {
    button: 1, link: 1, textbox: 1, searchbox: 1, checkbox: 1, radio: 1, combobox: 1,
    listbox: 1, option: 1, menuitem: 1, menuitemcheckbox: 1, menuitemradio: 1, tab: 1,
    switch: 1, slider: 1, spinbutton: 1, treeitem: 1, DisclosureTriangle: 1
  };
  var LANDMARK = {
    banner: 1, navigation: 1, main: 1, contentinfo: 1, complementary: 1, search: 1,
    dialog: 1, alertdialog: 1
  };
  var CONDITIONAL = { list: 1, listitem: 1, form: 1, region: 1, table: 1, menu: 1, menubar: 1,
    tablist: 1, tree: 1, radiogroup: 1, toolbar: 1, grid: 1, group: 0 };
  var QUIET_ROLE = { generic: 1, none: 1, presentation: 1 };
  var VALUE_ROLES = { textbox: 1, searchbox: 1, combobox: 1, slider: 1, spinbutton: 1 };
  var SKIP_TAGS = { script: 1, style: 1, template: 1, head: 1, meta: 1, link: 1, title: 1,
    noscript: 1, base: 1, datalist: 1, param: 1, source: 1, track: 1 };

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
  var FORM_TAGS = { input: 1, button: 1, select: 1, textarea: 1, option: 1, optgroup: 1, fieldset: 1 };
  function safeMatches(el, s) {
    try { return el.matches(s); } catch (e) { return false; }
  }
  function deepActive(doc) {
    var a = doc.activeElement;
    while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
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
    if (testid) out.push('[data-testid=' + quoteSel(testid) + ']');
    if (name && !QUIET_ROLE[role]) out.push('role:' + role + '[name=' + quoteSel(name) + ']');
    if (id) out.push('#' + CSS.escape(id));
    if (name && name.length <= 60 && (role === 'link' || role === 'button' || role === 'tab' ||
        role === 'menuitem' || role === 'option' || role === 'DisclosureTriangle')) {
      var raw = el.textContent || '';
      if (raw.length < 400 && fold(raw) === name) out.push('text:' + name);
    }
    out.push(cssPath(el));
    return out;
  }

  function parseOpts(s) {
    var o = {};
    if (typeof s === 'string' && s) {
      try { o = JSON.parse(s) || {}; } catch (e) { o = {}; }
    } else if (s && typeof s === 'object') o = s;
    return o;
  }

  function observe(optsJson) {
    var opts = parseOpts(optsJson);
    var max = opts.max_elements > 0 ? opts.max_elements | 0 : Infinity;
    var vpOnly = !!opts.viewport_only;
    beginCall();
    var nodes = [], els = [], offs = [];
    var truncated = false;
    var frameCounters = new Map();
    var W = window.innerWidth, H = window.innerHeight;

    function push(el, role, depth, prole, sib, frame, ia, off, extra) {
      if (nodes.length >= max) { truncated = true; return -1; }
      var n = { d: depth, role: role, el: el, prole: prole, sib: sib, frame: frame, ia: ia, off: off };
      if (extra) n.extra = extra;
      nodes.push(n);
      return nodes.length - 1;
    }

    /* walk the children of a box parent; counter maps tag -> count for sib */
    function walkKids(parent, kids, depth, prole, frame, off, counter, hiddenVis) {
      for (var i = 0; i < kids.length; i++) {
        if (truncated) return;
        var k = kids[i];
        if (k.nodeType !== 1) continue;
        walkEl(k, depth, prole, frame, off, counter, hiddenVis);
      }
    }

    function walkEl(el, depth, prole, frame, off, counter, hiddenVis) {
      var tag = lower(el);
      if (SKIP_TAGS[tag]) return;
      if (el.namespaceURI && el.namespaceURI !== 'http://www.w3.org/1999/xhtml' &&
          el.namespaceURI !== 'http://www.w3.org/2000/svg') return;
      var s = style(el);
      var disp = s.display;
      if (disp === 'none') return;
      if (attr(el, 'aria-hidden') === 'true') return;
      if (el.inert) return;
      var contents = disp === 'contents';
      var sib = 0;
      if (counter) {
        sib = counter.get(tag) || 0;
        counter.set(tag, sib + 1);
      }
      var vis = s.visibility;
      var invisible = vis === 'hidden' || vis === 'collapse';
      var role = invisible ? 'none' : roleOf(el);
      var ia = 0, include = false, cond = false;
      if (!invisible) {
        if (INTERACTIVE[role]) { include = true; ia = 1; }
        else if (role === 'heading' || LANDMARK[role]) include = true;
        else if (role === 'image') include = 'named';
        else if (CONDITIONAL[role]) { include = true; cond = true; }
        else if (!QUIET_ROLE[role] && isFocusable(el) && attr(el, 'tabindex') !== null &&
                 parseInt(attr(el, 'tabindex'), 10) >= 0 && role !== 'Iframe' && role !== 'SvgRoot') {
          include = true; ia = 1;
        }
      }
      var idx = -1, mark = nodes.length;
      if (include) {
        idx = push(el, role, depth, prole, sib, frame, ia, off, null);
        if (idx < 0) return;
      }
      var childDepth = idx >= 0 ? depth + 1 : depth;
      var childProle = QUIET_ROLE[role] ? prole : role;
      if (role === 'combobox' && tag === 'select') childProle = 'MenuListPopup';

      if (tag === 'select') {
        /* options live in the select's popup or list, not in layout */
        var ctr = new Map();
        var listbox = role === 'listbox';
        var kids = el.querySelectorAll('option');
        for (var i = 0; i < kids.length && !truncated; i++) {
          var o = kids[i];
          if (style(o).display === 'none' && listbox) continue;
          if (o.hidden && !listbox) continue;
          var sb = ctr.get('option') || 0;
          ctr.set('option', sb + 1);
          var oi = push(o, 'option', childDepth, childProle, sb, frame, listbox ? 1 : 0, off, null);
          if (oi < 0) break;
        }
      } else if (tag === 'iframe' || tag === 'frame') {
        var doc = null;
        try { doc = el.contentDocument; } catch (e) { doc = null; }
        if (doc && doc.documentElement) {
          var n = frameCounters.get(frame) || 0;
          frameCounters.set(frame, n + 1);
          var fpath = frame === '' ? String(n) : frame + '.' + n;
          var r = el.getBoundingClientRect();
          var cs = style(el);
          var noff = [off[0] + r.left + (parseFloat(cs.borderLeftWidth) || 0) + (parseFloat(cs.paddingLeft) || 0),
                      off[1] + r.top + (parseFloat(cs.borderTopWidth) || 0) + (parseFloat(cs.paddingTop) || 0)];
          var body = doc.body || doc.documentElement;
          walkKids(body, body.children, childDepth, childProle, fpath, noff, new Map(), false);
        }
      } else if (tag === 'input' || tag === 'textarea' || tag === 'img') {
        /* no DOM content worth walking */
      } else {
        var kids2 = el.shadowRoot ? el.shadowRoot.children :
          tag === 'slot' ? slotKids(el) : el.children;
        var sd = s.contentVisibility === 'hidden';
        if (!sd) walkKids(el, kids2, childDepth, childProle, frame, off, contents ? counter : new Map(), invisible);
      }
      if (idx >= 0 && cond && nodes.length === mark + 1) {
        /* structure without anything inside: drop it */
        nodes.pop();
      }
    }

    function slotKids(slot) {
      var a = slot.assignedElements();
      return a.length ? a : slot.children;
    }

    var prof = opts._prof ? [performance.now()] : null;
    var root = document.body || document.documentElement;
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
      walkKids(root, root.shadowRoot ? root.shadowRoot.children : root.children, 0, 'document', '', [0, 0], new Map(), false);
    }

    /* names and rects in separate passes: styles first, then layout once */
    var out = [], last = [];
    /* The index each element had in the previous observe: the registry keeps
       the ref of the same DOM node whatever else changed about it. */
    var prevIdx = new Map();
    for (var pi = 0; pi < api.last.length; pi++) prevIdx.set(api.last[pi], pi);
    if (prof) prof.push(performance.now());
    var rects = new Array(nodes.length);
    for (var i = 0; i < nodes.length; i++) {
      var el = nodes[i].el;
      var r = el.getBoundingClientRect();
      rects[i] = r;
    }
    if (prof) prof.push(performance.now());
    var tn = 0, ts = 0, tsel = 0;
    for (var j = 0; j < nodes.length; j++) {
      var n = nodes[j];
      var e = n.el, rr = rects[j];
      var b;
      if (n.role === 'option' && !n.ia && rr.width === 0 && rr.height === 0) {
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
      var name = n.role === 'option' ? optionNameFast(e) : nameOf(e);
      if (prof) tn += performance.now() - t0;
      if (n.role === 'image' && !name) continue;
      if ((n.role === 'region' || n.role === 'form') && !name && lower(e) !== 'form') continue;
      var tag = lower(e);
      var testid = attr(e, 'data-testid');
      var id = e.id || null;
      var node = {
        d: n.d, role: n.role, name: clip(name, 200), tag: tag,
        testid: testid, id: id, aria: attr(e, 'aria-label'), nattr: attr(e, 'name'),
        prole: n.prole, sib: n.sib, states: statesOf(e, n.role)
      };
      if (n.role === 'heading') node.level = headingLevel(e);
      if (VALUE_ROLES[n.role]) {
        var v = valueOf(e, n.role);
        if (v !== null) node.value = clip(v, 200);
      }
      node.b = b;
      node.frame = n.frame;
      node.ia = n.ia;
      if (prof) t0 = performance.now();
      node.sel = selectorsOf(e, n.role, node.name, testid, id);
      if (prof) tsel += performance.now() - t0;
      node.i = last.length;
      var pv = prevIdx.get(e);
      if (pv !== undefined) node.p = pv;
      last.push(e);
      out.push(node);
    }
    fixDepths(out);
    endCall();
    if (prof) {
      prof.push(performance.now());
      var ph = [];
      for (var q = 1; q < prof.length; q++) ph.push(Math.round(prof[q] - prof[q - 1]));
      return JSON.stringify({ walk_rects_rest: ph, names: Math.round(tn), sel: Math.round(tsel), count: out.length });
    }
    api.last = last;
    return JSON.stringify({
      url: location.href, title: document.title, truncated: truncated,
      count: out.length, nodes: out
    });
  }

  /* after dropping nodes, depths must stay a proper outline */
  function fixDepths(out) {
    var stack = []; /* original depths of the kept ancestors */
    for (var i = 0; i < out.length; i++) {
      var d = out[i].d;
      while (stack.length && stack[stack.length - 1] >= d) stack.pop();
      out[i].d = stack.length;
      stack.push(d);
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
    if (e.isContentEditable) return fold(e.textContent || '');
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

  var api = {
    version: VERSION,
    describe: describe,
    observe: observe,
    last: [],
    role: function (el) { beginCall(); try { return roleOf(el); } finally { endCall(); } },
    name: function (el) { beginCall(); try { return nameOf(el); } finally { endCall(); } }
  };
  Object.defineProperty(G, '__refgate', { value: api, configurable: true, writable: true, enumerable: false });
  return true;
})();
