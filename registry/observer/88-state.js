  /* ---- what a reload loses: fields, focus, scrolled containers ------------
   *
   * captureState() reads, for the elements of the last observe, the fields
   * whose value differs from their default (typed and not submitted: text
   * fields, textareas, checkboxes, radios, selects; password fields are
   * left out, so a typed password never reaches the session's saved state),
   * the text of top-level contenteditable elements, and which one has focus;
   * and, for any element, its scroll offsets when it is scrolled, by CSS
   * path. Fields are keyed by their index in last: the registry turns the
   * indexes into refs. restoreState(json) puts them back on a reloaded page
   * whose last observe re-bound those refs, firing input and change as fill
   * does, so a framework's own state follows.
   */

  var STATE_TEXT_MAX = 100000; /* characters of one field's value */
  var STATE_FIELDS_MAX = 1000;
  var STATE_SCROLLS_MAX = 200;
  var NO_STATE_TYPES = table({ password: 1, file: 1, submit: 1, reset: 1, button: 1, image: 1, hidden: 1 });

  function fieldState(el) {
    var tag = lower(el);
    if (tag === 'input') {
      var type = (el.type || 'text').toLowerCase();
      if (type === 'checkbox' || type === 'radio')
        return el.checked !== el.defaultChecked ? { checked: el.checked } : null;
      if (NO_STATE_TYPES[type]) return null;
      return el.value !== el.defaultValue ? { value: clip(el.value, STATE_TEXT_MAX) } : null;
    }
    if (tag === 'textarea')
      return el.value !== el.defaultValue ? { value: clip(el.value, STATE_TEXT_MAX) } : null;
    if (tag === 'select') {
      var sel = [], changed = false;
      for (var k = 0; k < el.options.length; k++) {
        var o = el.options[k];
        if (o.selected !== o.defaultSelected) changed = true;
        if (o.selected) sel.push(o.value);
      }
      return changed ? { selected: sel } : null;
    }
    if (isEditRoot(el))
      return { text: clip(el.textContent || '', STATE_TEXT_MAX) };
    return null;
  }

  function captureState() {
    var out = { fields: [], focus: -1, scroll: [] };
    var last = api.last, act = deepActive(document);
    for (var i = 0; i < last.length; i++) {
      var el = last[i];
      if (!el || !connected(el)) continue;
      if (el === act) out.focus = i;
      var f = out.fields.length < STATE_FIELDS_MAX ? fieldState(el) : null;
      if (f) { f.i = i; out.fields.push(f); }
    }
    var all = document.body ? document.body.getElementsByTagName('*') : [];
    for (var j = 0; j < all.length && out.scroll.length < STATE_SCROLLS_MAX; j++) {
      var e = all[j];
      if (e.scrollTop === 0 && e.scrollLeft === 0) continue;
      out.scroll.push({ css: cssPath(e), x: Math.round(e.scrollLeft), y: Math.round(e.scrollTop) });
    }
    return J(out);
  }

  /* editedFields() counts the fields of the whole document (not only the
   * last observe's) whose value a reload would reset: typed text (password
   * fields too, which captureState never keeps), toggled checkboxes and
   * radios, changed selections, chosen files. Bounded: it looks at the
   * first EDIT_SCAN_MAX fields. For the choice of which session to park. */
  var EDIT_SCAN_MAX = 5000;
  var NO_EDIT_TYPES = table({ submit: 1, reset: 1, button: 1, image: 1, hidden: 1 });

  function editedFields() {
    var els = document.querySelectorAll('input,textarea,select'), n = 0;
    var max = Math.min(els.length, EDIT_SCAN_MAX);
    for (var i = 0; i < max; i++) {
      var el = els[i], tag = lower(el);
      if (tag === 'select') {
        for (var k = 0; k < el.options.length; k++)
          if (el.options[k].selected !== el.options[k].defaultSelected) { n++; break; }
        continue;
      }
      if (tag === 'textarea') { if (el.value !== el.defaultValue) n++; continue; }
      var type = (el.type || 'text').toLowerCase();
      if (type === 'checkbox' || type === 'radio') { if (el.checked !== el.defaultChecked) n++; }
      else if (type === 'file') { if (el.files && el.files.length) n++; }
      else if (!NO_EDIT_TYPES[type] && el.value !== el.defaultValue) n++;
    }
    return J({ edited: n, scanned: max });
  }

  function restoreField(el, f) {
    var tag = lower(el);
    if (typeof f.checked === 'boolean' && tag === 'input') {
      if (el.checked === f.checked) return true;
      var cset = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'checked');
      if (cset && cset.set) cset.set.call(el, f.checked); else el.checked = f.checked;
      fireInput(el, null);
      fireChange(el);
      return true;
    }
    if (typeof f.value === 'string' && (tag === 'input' || tag === 'textarea')) {
      var set = nativeSetter(el);
      if (set) set.call(el, f.value); else el.value = f.value;
      fireInput(el, f.value);
      fireChange(el);
      return el.value === f.value;
    }
    if (Array.isArray(f.selected) && tag === 'select') {
      for (var k = 0; k < el.options.length; k++)
        el.options[k].selected = f.selected.indexOf(el.options[k].value) >= 0;
      fireInput(el, null);
      fireChange(el);
      return true;
    }
    if (typeof f.text === 'string' && el.isContentEditable) {
      if (el.textContent !== f.text) {
        el.textContent = f.text;
        fireInput(el, f.text);
      }
      return true;
    }
    return false;
  }

  function restoreState(json) {
    var s;
    try { s = JSON.parse(json); } catch (e) { return fail('restoreState: malformed state'); }
    if (!s || typeof s !== 'object') return fail('restoreState: malformed state');
    var done = 0, lost = 0, fields = Array.isArray(s.fields) ? s.fields : [];
    for (var k = 0; k < fields.length; k++) {
      var f = fields[k], el = f && typeof f.i === 'number' ? elAt(f.i) : null;
      if (el && connected(el) && restoreField(el, f)) done++; else lost++;
    }
    var scrolls = Array.isArray(s.scroll) ? s.scroll : [];
    for (var q = 0; q < scrolls.length; q++) {
      var sc = null;
      try { sc = document.querySelector(scrolls[q].css); } catch (e) { sc = null; }
      if (sc) { sc.scrollLeft = scrolls[q].x; sc.scrollTop = scrolls[q].y; }
    }
    var fe = typeof s.focus === 'number' && s.focus >= 0 ? elAt(s.focus) : null;
    if (fe && connected(fe) && typeof fe.focus === 'function') fe.focus({ preventScroll: true });
    return J({ restored: done, lost: lost });
  }

