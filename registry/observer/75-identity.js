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
    if (VALUE_ROLES[role] || isEditRoot(el)) {
      var v = valueOf(el, role);
      if (v !== null) node.value = clip(v, 200);
    }
    if (role === 'heading') node.level = headingLevel(el);
    return J(node);
  }

