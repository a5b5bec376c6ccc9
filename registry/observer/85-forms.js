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

  var UNFILLABLE = table({ checkbox: 1, radio: 1, file: 1, button: 1, submit: 1, reset: 1, image: 1, hidden: 1 });
  var STRICT_VALUE = table({ number: 1, range: 1, date: 1, time: 1, 'datetime-local': 1, month: 1, week: 1, color: 1 });

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
      if (isDisabled(el)) return notNow('the element is not actionable: disabled');
      if (el.readOnly) return notNow('the element is not actionable: read-only');
      el.focus({ preventScroll: true });
      /* the page's focus handler may take the field away: nothing to fill */
      if (!connected(el)) return notNow(DETACHED);
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
      if (isDisabled(el)) return notNow('the element is not actionable: disabled');
      el.focus({ preventScroll: true });
      if (!connected(el)) return notNow(DETACHED);
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
    if (isDisabled(el)) return notNow('the element is not actionable: disabled');
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

