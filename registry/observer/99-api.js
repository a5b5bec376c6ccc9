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
    waitCheck: guarded(waitCheck),
    captureState: guarded(captureState),
    editedFields: guarded(editedFields),
    restoreState: guarded(restoreState),
    /* counters of the observer's walks: full, incremental, answered unchanged; warm: 1 once
       the idle warm-up ran (95-warm.js) */
    stats: function () { return JSON.stringify(inc.stats); }
  };
  Object.defineProperty(G, '__refgate', { value: api, configurable: true, writable: true, enumerable: false });
  warmWhenIdle();
  return true;
})();
