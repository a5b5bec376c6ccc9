
  /*
   * Warming up. A page's first observe ran the observer's code cold: every
   * function compiled on its first call, in a renderer process that had never
   * run it. On a small page that was about 9 ms of a first observe's 20 to
   * 40 (the walk itself is a few). Once the observer is installed in a top-level
   * document, the first idle period runs one pure walk over a small detached
   * sample document, which compiles what a walk needs and changes nothing:
   * not the page (the sample is not in it, and nothing of the page is read but
   * its sheets' shape), not the observer's state (a `_full` walk keeps none),
   * not the counters but `warm`. The compiled code belongs to the renderer
   * process, so later documents in it start warm as well.
   *
   * It waits for idle time (requestIdleCallback, no deadline): a page that
   * is never idle before it is observed gets a cold observe, as before, and
   * the warm-up never delays the page's own work. Frames are left alone:
   * a page's iframes would each pay for a walk no one asked for.
   */
  var warmRoot = null;
  var WARM_HTML = '<header><nav><a href="#a">a</a> <a href="#b">b</a></nav></header><main>' +
    '<h1>t</h1><p>text <b>bold</b> <a href="#c">link</a></p><ul><li>one</li><li>two ' +
    '<button>x</button></li></ul><form><fieldset><legend>g</legend><label>l <input name=q ' +
    'placeholder=p></label><input type=checkbox id=c1><label for=c1>c</label><select><option>o' +
    '</option></select><textarea></textarea><button>b</button></fieldset></form><table><tr><th>h' +
    '</th></tr><tr><td>c</td></tr></table><img alt=x><details><summary>s</summary>d</details>' +
    '<div role=alert>e</div></main>';
  function warm() {
    if (inc.stats.warm) return;
    inc.stats.warm = 1;
    var pseudo0 = inc.stats.pseudo; /* the sample's reads are not the page's */
    try {
      var d = document.implementation.createHTMLDocument('');
      d.body.innerHTML = WARM_HTML;
      warmRoot = d.body;
      observe('{"_full":true,"sel":false,"text":true,"max_elements":500}');
    } catch (e) {
      /* a warm-up only: the first observe runs cold */
    } finally {
      warmRoot = null;
      inc.stats.pseudo = pseudo0;
    }
  }
  function warmWhenIdle() {
    try {
      if (G.top === G && typeof G.requestIdleCallback === 'function') G.requestIdleCallback(warm);
    } catch (e) { /* no idle callbacks here: no warm-up */ }
  }
