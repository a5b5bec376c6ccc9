/*
 * observer.js - refgate's page-side observer. Evaluating this file installs
 * globalThis.__refgate (once per version) and evaluates to true.
 *
 *   __refgate.describe(selector) -> JSON {role, name, description} or "null"
 *   __refgate.observe(optsJson)  -> JSON {url, title, truncated, count, nodes}
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
  var VERSION = 7;
  var G = globalThis;
  if (G.__refgate && G.__refgate.version === VERSION) return true;

  /* ---- per-call caches --------------------------------------------------- */

  var styleCache = null; /* Map element -> CSSStyleDeclaration */
  var pseudoCache = null; /* Map element -> [before, after] text */
  var nthCache = null;    /* Map parent -> Map child -> ":nth-of-type(k)" or "" */
  var activeEl = null;
  var pseudoSel;          /* selector of elements that may have ::before/::after text, null: any */
  var pseudoMemo = { key: null, sel: null }; /* pseudoSel across calls, by sheetsKey */
  var sheetsNow = null;   /* sheetsKey(document) during an observe, else null */
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
    reachMemo = null;
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

  var FOLD_RE = /[ \t\n\r\f\u00a0]+/g;
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
    search: 'searchbox', color: 'ColorWell', date: 'Date', month: 'DateTime', week: 'DateTime',
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
  function observe(optsJson) {
    sheetsNow = sheetsKey(document);
    try { return observeOnce(optsJson); } finally { sheetsNow = null; }
  }

  function observeOnce(optsJson) {
    var hit = cachedObserve(optsJson);
    if (hit) return hit;
    var opts = parseOpts(optsJson);
    var max = opts.max_elements > 0 ? opts.max_elements | 0 : Infinity;
    var vpOnly = !!opts.viewport_only;
    /* text: false is the interactive outline's walk, which shows no text */
    var textOn = opts.text !== false;
    beginCall();
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
      if ((rf && nRefs >= max) || nodes.length >= NODES_MAX) {
        truncated = true;
        if (nodes.length >= NODES_MAX) stopped = true;
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
          if (textTotal + t.length > TEXT_TOTAL_MAX || nodes.length >= NODES_MAX) textCut = true;
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
        else if (CONDITIONAL[role] || (textOn && TEXT_ROLES[role])) { include = true; cond = true; }
        else if (!QUIET_ROLE[role] && isFocusable(el) && attr(el, 'tabindex') !== null &&
                 parseInt(attr(el, 'tabindex'), 10) >= 0 && role !== 'Iframe' && role !== 'SvgRoot') {
          include = true; ia = 1;
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
      var idx = -1, mark = nodes.length;
      if (include) {
        idx = push(el, role, depth, prole, sib, frame, ia, off, extra);
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
          walkKids(body, body, childDepth, childProle, fpath, noff, new Map(), false);
        }
      } else if (tag === 'input' || tag === 'textarea' || tag === 'img') {
        /* no DOM content worth walking */
      } else {
        if (el.shadowRoot) watch(el.shadowRoot, null);
        var kids2 = el.shadowRoot ? el.shadowRoot :
          tag === 'slot' ? slotKids(el) : tag === 'details' && !el.open ? closedDetailsKids(el) :
          el;
        var sd = s.contentVisibility === 'hidden';
        if (!sd) walkKids(el, kids2, childDepth, childProle, frame, off, contents ? counter : new Map(), invisible);
      }
      if (include) flushText();
      else if (edge === 2) flushText();
      else if (edge === 1) softSpace();
      if (idx >= 0 && cond && nodes.length === mark + 1) {
        /* structure without anything inside: drop it */
        nodes.pop();
      }
    }

    function slotKids(slot) {
      /* the elements as walkKidsOf sees them, with the text between them */
      return slot.assignedElements().length ? slot.assignedNodes() : slot;
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
      walkKids(root, root.shadowRoot ? root.shadowRoot : root, 0, 'document', '', [0, 0], new Map(), false);
    }
    flushText();

    /* names and rects in separate passes: styles first, then layout once */
    var out = [], last = [];
    /* The index each element had in the previous observe: the registry keeps
       the ref of the same DOM node whatever else changed about it. */
    var prevIdx = new Map();
    for (var pi = 0; pi < api.last.length; pi++) prevIdx.set(api.last[pi], pi);
    if (prof) prof.push(performance.now());
    var rects = new Array(nodes.length);
    /* Bounds are for the registry (elements with refs) and viewport_only. */
    for (var i = 0; i < nodes.length; i++) {
      if (!vpOnly && !nodes[i].rf) continue;
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
      var name = !n.rf && AUTHOR_NAME_ROLES[n.role] ? authorName(e) : obsName(e, n.role);
      if (prof) tn += performance.now() - t0;
      if (n.role === 'image' && !name) continue;
      if ((n.role === 'region' || n.role === 'form') && !name && lower(e) !== 'form') continue;
      if (n.role === 'group' && !name) continue;
      /* Absent signals are left out rather than sent as null: on a page of
         thousands of controls the reply is megabytes, and its transfer and
         parsing cost as much as the walk. A node without a ref (structure,
         text holders, elements past the cap) needs no identity, bounds,
         selectors or index: only what its outline line shows. */
      var node = { d: n.d, role: n.role, name: name };
      var tag, testid = null, id = null;
      if (n.rf) {
        tag = lower(e);
        testid = attr(e, 'data-testid');
        id = e.id || null;
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
      if (VALUE_ROLES[n.role]) {
        var v = valueOf(e, n.role);
        if (v !== null) node.value = clip(v, 200);
        /* a field's hint, when it is not already its name and nothing is typed */
        var ph = attr(e, 'placeholder') || attr(e, 'aria-placeholder');
        if (ph && !v && textOn) {
          ph = fold(ph);
          if (ph && ph !== name) node.ph = clip(ph, 200);
        }
      }
      if (n.extra && n.extra.nr) node.nr = 1;
      if (n.rf) {
        node.b = b;
        if (n.frame) node.frame = n.frame;
        if (n.ia) node.ia = 1;
        if (prof) t0 = performance.now();
        if (opts.sel !== false) node.sel = selectorsOf(e, n.role, node.name, testid, id);
        if (prof) tsel += performance.now() - t0;
        node.i = last.length;
        var pv = prevIdx.get(e);
        if (pv !== undefined) node.p = pv;
        last.push(e);
      }
      out.push(node);
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
    var json = JSON.stringify({
      url: location.href, title: document.title, truncated: truncated || textCut,
      count: out.length, nodes: out
    });
    api.last = last;
    remember(optsJson, json);
    return json;
  }

  /*
   * The unchanged-page cache. Observing a page nobody touched gives the same
   * answer, so the last reply is kept and handed back, marked "same" (the
   * registry then knows every node kept its index), while nothing can have
   * changed it:
   *   - no DOM mutation (the document, every open shadow root and frame
   *     document walked);
   *   - no event that goes with a change a mutation does not show: input,
   *     change, focus, scroll, resize, load (of an image or frame), the
   *     pointer and keys (hover styles), toggle (a popover opened by
   *     script), hashchange (:target), transitions and animations starting,
   *     fonts loading;
   *   - no animation running (animating(): script-driven ones fire no
   *     event);
   *   - the same style sheets: how many, and how many rules each readable
   *     one has (insertRule and deleteRule are not mutations);
   *   - the same scroll position, viewport and focused element, the same
   *     values, checked and selected states of the listed fields (scripts
   *     set them as properties), the same options.
   * CACHE_MS is only a safety net for what none of that sees (a rule
   * replaced in place); the tests show each of the above without it.
   */
  var CACHE_MS = 30000;
  var cache = { json: null, key: null, t: 0, dirty: true, sx: 0, sy: 0, w: 0, h: 0, active: null,
                forms: [], sheets: '' };
  var mo = null, watched = new WeakSet();
  var DIRTY_EVENTS = ['input', 'change', 'focusin', 'focusout', 'scroll', 'resize', 'load',
                      'transitionrun', 'transitionend', 'transitioncancel', 'animationstart',
                      'animationiteration', 'animationend', 'animationcancel', 'pageshow',
                      'popstate', 'hashchange', 'toggle', 'pointerdown', 'pointerup',
                      'pointerover', 'pointerout', 'mouseover', 'mouseout', 'keydown', 'keyup',
                      'submit', 'reset', 'invalid', 'fullscreenchange', 'visibilitychange'];

  function markDirty() { cache.dirty = true; }

  function watch(root, win) {
    if (watched.has(root)) return;
    watched.add(root);
    if (!mo) mo = new MutationObserver(markDirty);
    mo.observe(root, { subtree: true, childList: true, attributes: true, characterData: true });
    if (win) {
      for (var i = 0; i < DIRTY_EVENTS.length; i++)
        win.addEventListener(DIRTY_EVENTS[i], markDirty, true);
      try {
        if (win.document.fonts) win.document.fonts.addEventListener('loadingdone', markDirty);
      } catch (e) { /* no font set: nothing to watch */ }
    }
  }

  /* The style sheets' shape: their count and rule counts (unreadable ones count -1). */
  function sheetsKey(doc) {
    var parts = [], list = doc.styleSheets;
    for (var i = 0; i < list.length; i++) {
      var n;
      try { n = list[i].cssRules.length; } catch (e) { n = -1; }
      parts.push(n + (list[i].disabled ? 'd' : ''));
    }
    var ad = doc.adoptedStyleSheets || [];
    for (var j = 0; j < ad.length; j++) parts.push('a' + ad[j].cssRules.length);
    return parts.join(',');
  }

  function remember(key, json) {
    watch(document, window);
    if (mo) mo.takeRecords(); /* nothing can run during the walk: these predate it */
    cache.json = json; cache.key = key; cache.t = Date.now(); cache.dirty = false;
    cache.sx = window.scrollX; cache.sy = window.scrollY;
    cache.w = window.innerWidth; cache.h = window.innerHeight;
    cache.active = document.activeElement;
    cache.sheets = sheetsNow !== null ? sheetsNow : sheetsKey(document);
    /* Scripts set value, checked and selectedIndex as properties: no
       mutation, no event. Keep them to compare. */
    var forms = [];
    for (var i = 0; i < api.last.length; i++) {
      var e = api.last[i], t = lower(e);
      if (t === 'input' || t === 'textarea' || t === 'select' || t === 'option')
        forms.push(e, e.value, e.checked, e.selectedIndex, e.selected);
    }
    cache.forms = forms;
  }

  function cachedObserve(key) {
    if (mo && mo.takeRecords().length) cache.dirty = true;
    if (cache.dirty || cache.json === null || cache.key !== key ||
        Date.now() - cache.t > CACHE_MS || window.scrollX !== cache.sx ||
        window.scrollY !== cache.sy || window.innerWidth !== cache.w ||
        window.innerHeight !== cache.h || document.activeElement !== cache.active ||
        animating(document) || sheetsNow !== cache.sheets)
      return null;
    for (var i = 0; i < api.last.length; i++)
      if (!api.last[i].isConnected) return null;
    var f = cache.forms;
    for (var j = 0; j < f.length; j += 5) {
      var e = f[j];
      if (e.value !== f[j + 1] || e.checked !== f[j + 2] || e.selectedIndex !== f[j + 3] ||
          e.selected !== f[j + 4])
        return null;
    }
    return '{"same":true,' + cache.json.slice(1);
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
    if (el.inert) return false;
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
    if (ax && (attr(el, 'aria-hidden') === 'true' || el.inert)) return false;
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

  /* ---- the element table shared with the C side --------------------------- */

  var lastMap = null, lastMapFor = null, lastMapLen = 0;
  function indexOfLast(el) {
    var L = api.last;
    if (lastMapFor !== L || lastMapLen > L.length) {
      lastMap = new Map();
      lastMapFor = L;
      lastMapLen = 0;
    }
    for (; lastMapLen < L.length; lastMapLen++)
      if (!lastMap.has(L[lastMapLen])) lastMap.set(L[lastMapLen], lastMapLen);
    var i = lastMap.get(el);
    if (i !== undefined) return i;
    L.push(el);
    lastMap.set(el, L.length - 1);
    lastMapLen = L.length;
    return L.length - 1;
  }

  function elAt(i) {
    if (typeof i === 'string' && /^-?\d+$/.test(i)) i = +i;
    if (typeof i !== 'number' || i !== Math.floor(i) || i < 0 || i >= api.last.length) return null;
    var el = api.last[i];
    return el && el.nodeType === 1 ? el : null;
  }

  function connected(el) {
    if (!el || !el.isConnected) return false;
    for (var d = el.ownerDocument, guard = 0; d !== document && guard < 64; guard++) {
      var f = frameOfDoc(d);
      if (!f || !f.isConnected) return false;
      var cd = null;
      try { cd = f.contentDocument; } catch (e) { cd = null; }
      if (cd !== d) return false;
      d = f.ownerDocument;
    }
    return d === document;
  }

  var J = JSON.stringify;
  function fail(msg) { return J({ error: msg }); }
  var DETACHED = 'the element is no longer in the document';

  /* the element at i, or an error string */
  function target(i) {
    var el = elAt(i);
    if (!el) return { err: fail('no element at index ' + i + ': observe or resolve again') };
    if (!connected(el)) return { err: fail(DETACHED) };
    return { el: el };
  }

  function guarded(fn) {
    return function () {
      beginCall();
      try {
        return fn.apply(null, arguments);
      } catch (e) {
        return fail('page-side error: ' + (e && e.message ? e.message : String(e)));
      } finally {
        endCall();
        reachMemo = null;
      }
    };
  }

  /* ---- resolve ---------------------------------------------------------- */

  var MAX_MATCHES = 1000;
  var TEXT_SKIP = { script: 1, style: 1, template: 1, noscript: 1, head: 1, title: 1, meta: 1,
    link: 1, base: 1, datalist: 1, param: 1, source: 1, track: 1, select: 1, textarea: 1,
    input: 1, iframe: 1, frame: 1, object: 1, embed: 1, desc: 1, metadata: 1, defs: 1, symbol: 1 };
  var WS = /[ \t\n\r\f\u00a0]/;
  var BUTTONISH = { submit: 1, button: 1, reset: 1 };
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

  var ROLE_ALIAS = { img: 'image', directory: 'list', presentation: 'none' };

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
    if (e.isContentEditable && (!e.parentElement || !e.parentElement.isContentEditable)) return true;
    return false;
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

  /* ---- identity and inspect -------------------------------------------- */

  function identityRaw(el) {
    var role = obsRole(el);
    return {
      connected: true,
      testid: attr(el, 'data-testid'), id: el.id || null, aria: attr(el, 'aria-label'),
      role: role, name: obsName(el, role), tag: lower(el),
      prole: walkProle(el), sib: walkSib(el), nattr: attr(el, 'name')
    };
  }

  function identity(i) {
    var el = elAt(i);
    if (!el || !connected(el)) return J({ connected: false });
    return J(identityRaw(el));
  }

  function boundsOf(el, off) {
    var rr = el.getBoundingClientRect();
    if (lower(el) === 'option' && rr.width === 0 && rr.height === 0) {
      var pr = el.closest('select');
      if (pr) rr = pr.getBoundingClientRect();
    }
    return [Math.round(rr.left + off[0]), Math.round(rr.top + off[1]), Math.round(rr.width), Math.round(rr.height)];
  }

  function inspect(i) {
    var t = target(i);
    if (t.err) return t.err;
    var el = t.el;
    var tag = lower(el);
    var role, name, desc;
    if (!axVisible(el) && !(tag === 'option' && selectOfOption(el) && axVisible(selectOfOption(el)))) {
      role = 'none'; name = ''; desc = '';
    } else {
      role = obsRole(el);
      name = obsName(el, role);
      if (role === 'image' && tag === 'img' && !name && attr(el, 'alt') === '') role = 'none';
      desc = descriptionOf(el);
    }
    var testid = attr(el, 'data-testid'), id = el.id || null;
    var fi = frameInfo(el.ownerDocument);
    var node = {
      role: role, name: name, description: desc, states: statesOf(el, role), tag: tag,
      testid: testid, id: id, aria: attr(el, 'aria-label'), nattr: attr(el, 'name'),
      prole: walkProle(el), sib: walkSib(el), b: boundsOf(el, fi.off), frame: fi.path,
      sel: selectorsOf(el, role, name, testid, id)
    };
    if (VALUE_ROLES[role]) {
      var v = valueOf(el, role);
      if (v !== null) node.value = clip(v, 200);
    }
    if (role === 'heading') node.level = headingLevel(el);
    return J(node);
  }

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
      if (opts.enabled && isDisabled(el)) return J({ state: 'disabled' });
      return null;
    })();
    if (pre) return Promise.resolve(pre);
    /*
     * Stability. When nothing was scrolled and no CSS animation or transition
     * runs in the element's document or the top one, its box cannot move
     * between frames: check at once (a click then costs a few DevTools round
     * trips, not two frames). Otherwise compare the box across two frames.
     */
    if (!scrolled && !animating(el.ownerDocument) && !animating(document)) {
      var rs = guarded(function () { return rectOf(boxEl(el)); })();
      return Promise.resolve(finish(typeof rs === 'string' ? null : rs));
    }
    var r1 = null;
    return nextFrame().then(function () {
      if (connected(el)) r1 = guarded(function () { return rectOf(boxEl(el)); })();
      return nextFrame();
    }).then(function () {
      return finish(r1);
    });

    function finish(r1) {
      return guarded(function () {
        if (!connected(el)) return J({ state: 'detached' });
        var h = checkVisible(el);
        if (h) return h;
        if (opts.enabled && isDisabled(el)) return J({ state: 'disabled' });
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

  /* ---- form operations ------------------------------------------------- */

  function parseValue(s) {
    if (typeof s !== 'string') return s;
    try { return JSON.parse(s); } catch (e) { return s; }
  }

  /* a label stands for its control */
  function retarget(el) {
    if (lower(el) === 'label' && el.control) return el.control;
    return el;
  }

  function nativeSetter(el) {
    var w = el.ownerDocument.defaultView || window;
    var proto = lower(el) === 'textarea' ? w.HTMLTextAreaElement.prototype :
      lower(el) === 'select' ? w.HTMLSelectElement.prototype : w.HTMLInputElement.prototype;
    var d = Object.getOwnPropertyDescriptor(proto, 'value');
    return d && d.set;
  }

  function fireInput(el, data) {
    var w = el.ownerDocument.defaultView || window;
    var ev;
    try {
      ev = new w.InputEvent('input', { bubbles: true, composed: true, inputType: 'insertText', data: data });
    } catch (e) {
      ev = new w.Event('input', { bubbles: true, composed: true });
    }
    el.dispatchEvent(ev);
  }
  function fireChange(el) {
    var w = el.ownerDocument.defaultView || window;
    el.dispatchEvent(new w.Event('change', { bubbles: true }));
  }

  var UNFILLABLE = { checkbox: 1, radio: 1, file: 1, button: 1, submit: 1, reset: 1, image: 1, hidden: 1 };
  var STRICT_VALUE = { number: 1, range: 1, date: 1, time: 1, 'datetime-local': 1, month: 1, week: 1, color: 1 };

  function fill(i, valueJson) {
    var t = target(i);
    if (t.err) return t.err;
    var el = retarget(t.el);
    /* the value itself (a string, as act.c passes it); anything else as text */
    var value = valueJson;
    if (value === null || value === undefined) value = '';
    value = String(value);
    var tag = lower(el);
    if (tag === 'select') return fail('use select');
    if (tag === 'input' || tag === 'textarea') {
      var type = tag === 'input' ? (el.type || 'text').toLowerCase() : 'textarea';
      if (UNFILLABLE[type]) return fail('cannot fill an input of type ' + type);
      if (isDisabled(el)) return fail('the element is disabled');
      if (el.readOnly) return fail('the element is read-only');
      el.focus({ preventScroll: true });
      try { el.select(); } catch (e) { /* types without selection */ }
      var set = nativeSetter(el);
      if (set) set.call(el, value); else el.value = value;
      if (STRICT_VALUE[type] && value !== '' && el.value !== value && type !== 'color')
        return fail('malformed value "' + clip(value, 60) + '" for an input of type ' + type);
      fireInput(el, value);
      fireChange(el);
      return J({ ok: true });
    }
    if (el.isContentEditable) {
      if (isDisabled(el)) return fail('the element is disabled');
      el.focus({ preventScroll: true });
      var sel = el.ownerDocument.getSelection && el.ownerDocument.getSelection();
      if (sel) {
        try { sel.selectAllChildren(el); } catch (e) { /* ignore */ }
      }
      el.textContent = value;
      fireInput(el, value);
      return J({ ok: true });
    }
    return fail('the element is not an <input>, <textarea> or contenteditable element');
  }

  function select(i, valuesJson) {
    var t = target(i);
    if (t.err) return t.err;
    var el = retarget(t.el);
    if (lower(el) === 'option' && selectOfOption(el)) el = selectOfOption(el);
    if (lower(el) !== 'select') {
      var r = roleOf(el);
      if (r === 'listbox' || r === 'combobox') return fail('not a <select>: click the option instead');
      return fail('not a <select>');
    }
    var vals = parseValue(valuesJson);
    if (vals === null || vals === undefined) vals = [];
    if (!Array.isArray(vals)) vals = [vals];
    for (var q = 0; q < vals.length; q++) vals[q] = String(vals[q]);
    if (isDisabled(el)) return fail('the element is disabled');
    if (!el.multiple && vals.length > 1) return fail('the <select> takes one value, not ' + vals.length);
    var opts = el.options, pick = [];
    for (var k = 0; k < vals.length; k++) {
      var v = vals[k], fv = fold(v), hit = null;
      for (var j = 0; j < opts.length && !hit; j++) if (opts[j].value === v) hit = opts[j];
      for (var j2 = 0; j2 < opts.length && !hit; j2++)
        if (optionText(opts[j2]) === fv || fold(opts[j2].text || '') === fv) hit = opts[j2];
      if (!hit) return fail('no option matches "' + clip(v, 80) + '"');
      if (hit.disabled) return fail('the option "' + clip(v, 80) + '" is disabled');
      pick.push(hit);
    }
    if (el.multiple) {
      for (var m = 0; m < opts.length; m++) opts[m].selected = pick.indexOf(opts[m]) >= 0;
    } else if (pick.length) {
      pick[0].selected = true;
    } else {
      el.selectedIndex = -1;
    }
    var w = el.ownerDocument.defaultView || window;
    el.dispatchEvent(new w.Event('input', { bubbles: true, composed: true }));
    fireChange(el);
    var out = [];
    for (var s = 0; s < opts.length; s++) if (opts[s].selected) out.push(opts[s].value);
    return J({ selected: out });
  }

  var CHECK_ROLES = { checkbox: 1, radio: 1, switch: 1, menuitemcheckbox: 1, menuitemradio: 1,
    option: 1, treeitem: 1 };

  function checked(i) {
    var t = target(i);
    if (t.err) return t.err;
    var el = retarget(t.el);
    var tag = lower(el);
    if (tag === 'input') {
      var ty = (el.type || '').toLowerCase();
      if (ty === 'checkbox') return J({ checked: el.indeterminate ? 'mixed' : !!el.checked });
      if (ty === 'radio') return J({ checked: !!el.checked });
    }
    var r = roleOf(el);
    var ac = attr(el, 'aria-checked');
    if (CHECK_ROLES[r] && ac !== null) {
      ac = ac.trim().toLowerCase();
      return J({ checked: ac === 'mixed' ? 'mixed' : ac === 'true' });
    }
    if (r === 'checkbox' || r === 'radio' || r === 'switch') return J({ checked: false });
    var ap = attr(el, 'aria-pressed');
    if (ap !== null && (r === 'button' || tag === 'button')) {
      ap = ap.trim().toLowerCase();
      if (ap === 'mixed') return J({ checked: 'mixed' });
      if (ap === 'true' || ap === 'false') return J({ checked: ap === 'true' });
    }
    return fail('not checkable');
  }

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

  function focus(i) {
    var t = target(i);
    if (t.err) return t.err;
    var el = t.el;
    el.focus();
    return J({ ok: true });
  }

  function waitCheck(specJson) {
    var s;
    try { s = typeof specJson === 'string' ? JSON.parse(specJson) : specJson; } catch (e) { s = null; }
    if (!s || typeof s !== 'object') return fail('waitCheck: malformed spec');
    if (typeof s.text === 'string') return J({ ok: fold(pageText()).indexOf(fold(s.text)) >= 0 });
    if (typeof s.url === 'string') return J({ ok: location.href.indexOf(s.url) >= 0 });
    return fail('waitCheck: give "text" or "url"');
  }

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
    waitCheck: guarded(waitCheck)
  };
  Object.defineProperty(G, '__refgate', { value: api, configurable: true, writable: true, enumerable: false });
  return true;
})();
