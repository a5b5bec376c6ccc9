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

  var GLOBAL_ARIA_SET = {};
  for (var gi = 0; gi < GLOBAL_ARIA.length; gi++) GLOBAL_ARIA_SET[GLOBAL_ARIA[gi]] = 1;

  /* one look at the attributes el has, not one call per ARIA attribute */
  function hasGlobalAria(el) {
    var names = el.getAttributeNames();
    for (var i = 0; i < names.length; i++)
      if (GLOBAL_ARIA_SET[names[i]] === 1) return true;
    return false;
  }

  /* Where editing starts: a contenteditable element whose parent is not
     editable (a rich-text editor, a chat box). Chromium keeps its role
     (generic for a plain <div>) and makes it focusable. */
  function isEditRoot(el) {
    return el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable);
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
    return isEditRoot(el);
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

  var SECTIONING = table({ article: 1, aside: 1, main: 1, nav: 1, section: 1 });
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

  var INPUT_ROLES = table({
    button: 'button', submit: 'button', reset: 'button', image: 'button', file: 'button',
    checkbox: 'checkbox', radio: 'radio', range: 'slider', number: 'spinbutton',
    search: 'searchbox', color: 'ColorWell', date: 'Date', month: 'DateTime', week: 'DateTime',
    time: 'InputTime', 'datetime-local': 'DateTime', hidden: 'none'
  });

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

