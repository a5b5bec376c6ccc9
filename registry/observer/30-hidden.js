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

