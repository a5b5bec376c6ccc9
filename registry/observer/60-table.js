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
  /* a refusal that may pass if the command is sent again (the element was
     disabled or left the document meanwhile): not_actionable, not bad_request */
  function notNow(msg) { return J({ error: msg, code: 'not_actionable' }); }
  var DETACHED = 'the element is not actionable: it is no longer in the document';

  /* the element at i, or an error string */
  function target(i) {
    var el = elAt(i);
    if (!el) return { err: fail('no element at index ' + i + ': observe or resolve again') };
    if (!connected(el)) return { err: notNow(DETACHED) };
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

