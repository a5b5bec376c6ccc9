// report.mjs DIR - the tables of `make bench`, from the JSON files that
// bench/run.sh collected in DIR (one per bench, names below). First one table
// per bench with its details, then the summary: one row per comparison with
// refgate's figure, the peer's, the ratio refgate / peer, and the issue's
// target where it sets one; headed by the machine, the date, the load on the
// machine and the versions. In a full run the time figures read
// "median (min-max)"; in a quick run, medians only.
//
// Files: floor-refgate, floor-playwright, observe-refgate, observe-playwright,
// click-refgate, click-playwright, park-refgate, gateway-refgate, loop
// (bench/loop.c: the React agent loop of refgate, refgate-cli and
// agent-browser), parallel-playwright, mcp (each .json), and meta.json from run.sh (quick,
// git rev, load averages, the wall time of each step). A missing or broken
// file leaves its rows out with a note; the report never fails for one.
//
// Text coverage (issue 19): for each corpus page, the distinct words of the
// StaticText nodes of Chromium's accessibility tree in
// tests/corpus/pages-ax/<page>.ax.json, and the share of them found in
// each side's snapshot: refgate's default (full) outline and Playwright's ai
// snapshot, read from the files observe.c and observe.mjs saved
// (DIR/snap/<side>/<page>.txt, else the path in their JSON's `snap`). One
// tokenizer for all three: lowercased, runs of 3 or more Unicode letters or
// digits.

import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node bench/report.mjs DIR');
  process.exit(2);
}
const notes = [];
function load(name) {
  const p = join(dir, `${name}.json`);
  if (!existsSync(p)) {
    notes.push(`${name}: no result (the bench did not run or failed; see its log)`);
    return undefined;
  }
  try {
    return JSON.parse(readFileSync(p, 'utf8'));
  } catch (err) {
    notes.push(`${name}: unreadable result: ${err.message}`);
    return undefined;
  }
}

const meta = load('meta') ?? {};
const rgFloor = load('floor-refgate');
const pwFloor = load('floor-playwright');
const rgObs = load('observe-refgate');
const pwObs = load('observe-playwright');
const rgClick = load('click-refgate');
const pwClick = load('click-playwright');
const rgPark = load('park-refgate');
const rgGw = load('gateway-refgate');
const pwPar = load('parallel-playwright');
const mcp = load('mcp');
const reactLoop = load('loop');
const quick = !!meta.quick;

// ---- formatting ----

const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
function num(v) {
  if (!isNum(v)) return '-';
  const a = Math.abs(v);
  return v.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
}
const r2 = (v) => (isNum(v) ? v.toFixed(2) : '-');
const ratio = (a, b) => (isNum(a) && isNum(b) && b > 0 ? a / b : undefined);
function median(xs) {
  const v = xs.filter(isNum).sort((a, b) => a - b);
  if (!v.length) return undefined;
  const k = v.length;
  return k % 2 ? v[(k - 1) / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

/** A figure: a median with an optional range. */
const fig = (med, min, max) => (isNum(med) ? { med, min, max } : undefined);
function cell(f) {
  if (!f) return '-';
  if (quick || !isNum(f.min) || !isNum(f.max)) return num(f.med);
  return `${num(f.med)} (${num(f.min)}-${num(f.max)})`;
}

/** A Markdown table: the first column left-aligned, the others right-aligned. */
function printTable(header, rows, align) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const left = (i) => (align ? align[i] === 'l' : i === 0);
  const line = (r) => '| ' + r.map((c, i) => (left(i) ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join(' | ') + ' |';
  console.log(line(header));
  console.log('|' + widths.map((w, i) => (left(i) ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|') + '|');
  for (const r of rows) console.log(line(r));
}

// ---- the heading ----

function cpuModel() {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) return m[1].trim();
  } catch {
    /* not Linux */
  }
  return os.cpus()[0]?.model ?? 'unknown CPU';
}

function heading() {
  const cores = os.cpus().length;
  console.log(`# refgate benchmarks (${quick ? 'quick run' : 'full run'}), ${meta.date ?? new Date().toISOString()}`);
  console.log('');
  console.log(`machine: ${cpuModel()}, ${cores} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ` +
              `${os.type()} ${os.release()}`);
  const chromium = rgFloor?.chromium ?? rgGw?.chromium ?? rgObs?.chromium ?? 'unknown';
  console.log(`versions: Chromium ${chromium.replace(/^Chrome\//, '')} (Debian's /usr/lib/chromium/chromium, ` +
              `the same binary and flags on every side but agent-browser, which launches it with its own flags); playwright-core ${pwFloor?.version ?? pwObs?.version ?? '?'}; ` +
              `@playwright/mcp ${mcp?.version ?? '?'} (on its own playwright-core ${mcp?.core_version ?? '?'}); ` +
              `${reactLoop?.agent_browser ?? 'agent-browser ?'}; ` +
              `node ${process.version}; refgate ${meta.git ?? 'unknown'}`);
  if (meta.load_start) {
    // The benches keep both cores busy themselves (a browser, workers, nginx, Redis, a client), so
    // the load before the run is what tells whether other work shared the machine.
    const during = Object.values(meta.load_after_step ?? {});
    const busy = meta.load_start[0] > cores * 0.5;
    console.log(`load average (1 min) before the run ${meta.load_start[0]} on ${cores} cores` +
                (during.length ? `; after each bench ${during.join(' ')} (the benches themselves load the machine)` : '') +
                `; at the end ${meta.load_end?.[0] ?? '?'}: ` +
                (busy ? 'other work was running: absolute figures are inflated and noisy, ratios taken in one run are ' +
                        'the figures to read' : 'the machine was otherwise quiet'));
  }
  if (meta.seconds) console.log(`wall time of the run: ${meta.seconds} s (${Object.entries(meta.steps ?? {}).map(([k, v]) => `${k} ${v} s`).join(', ')})`);
  console.log('');
}

// ---- the detail tables ----

function floorTable() {
  if (!rgFloor || !pwFloor) return;
  console.log('## floor: the DevTools pipe and the pool, below the gateway (bench/floor.c, bench/peer/floor.mjs)');
  console.log('');
  const rows = [];
  const add = (f, a, b, unit) => rows.push([`${f} [${unit}]`, num(a), num(b), r2(ratio(a, b))]);
  add('cold start of a browser', rgFloor.cold_start_ms, pwFloor.cold_start_ms, 'ms');
  add('evaluate 1+1 round trip p50', rgFloor.evaluate_p50_ms, pwFloor.evaluate_p50_ms, 'ms');
  add('evaluate 1+1 round trip p99', rgFloor.evaluate_p99_ms, pwFloor.evaluate_p99_ms, 'ms');
  add('raw pipe round trip p50 (Browser.getVersion)', rgFloor.getversion_p50_ms, undefined, 'ms');
  for (const n of Object.keys(rgFloor.context_create_ms ?? {}))
    add(`context + page creation, ${n} contexts, median`, rgFloor.context_create_ms[n], pwFloor.context_create_ms?.[n], 'ms');
  for (const n of Object.keys(rgFloor.context_pss_mib ?? {}))
    add(`PSS per context (about:blank), ${n} contexts`, rgFloor.context_pss_mib[n], pwFloor.context_pss_mib?.[n], 'MiB');
  printTable(['figure', 'refgate', 'Playwright', 'ratio'], rows);
  console.log('');
}

const obsNames = () => {
  const names = [];
  if (rgObs?.controls || pwObs?.controls) names.push('controls');
  for (const n of Object.keys(rgObs?.pages ?? {})) names.push(n);
  for (const n of Object.keys(pwObs?.pages ?? {})) if (!names.includes(n)) names.push(n);
  return names;
};
const obsOf = (o, n) => (n === 'controls' ? o?.controls : o?.pages?.[n]) ?? {};
const mcpPage = (n) => mcp?.default?.pages?.[n];

// ---- text coverage ----

/** Chromium's trees of the corpus pages, beside the pages. */
const AX_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'tests', 'corpus', 'pages-ax');
/** The distinct words of a text: lowercased runs of 3 or more Unicode letters or digits. */
const wordsOf = (text) => new Set(text.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? []);
const pageBase = (n) => n.replace(/\.html$/, '');

/** The distinct words of the page's StaticText nodes in Chromium's tree, or undefined. */
function axWords(n) {
  const p = join(AX_DIR, `${pageBase(n)}.ax.json`);
  if (!existsSync(p)) return undefined;
  try {
    const ax = JSON.parse(readFileSync(p, 'utf8'));
    const words = new Set();
    for (const node of ax.nodes ?? [])
      if (node.role === 'StaticText' && node.name) for (const w of wordsOf(node.name)) words.add(w);
    return words;
  } catch (err) {
    notes.push(`coverage ${n}: unreadable ${p}: ${err.message}`);
    return undefined;
  }
}

/** A side's saved snapshot of page n (DIR/snap/<side>/<page>.txt, else its JSON's snap), or undefined. */
function snapText(o, side, n) {
  for (const p of [join(dir, 'snap', side, `${pageBase(n)}.txt`), obsOf(o, n).snap]) {
    if (!p || !existsSync(p)) continue;
    try {
      return readFileSync(p, 'utf8');
    } catch {
      /* try the next */
    }
  }
  return undefined;
}

/** Per corpus page { words, rg, pw } (found counts, undefined when a side's snapshot is missing). */
let coverageCache;
function coverage() {
  if (coverageCache) return coverageCache;
  coverageCache = new Map();
  if (!rgObs || !pwObs) return coverageCache;
  for (const n of obsNames().filter((x) => x !== 'controls')) {
    const words = axWords(n);
    if (!words) {
      notes.push(`coverage ${n}: no Chromium tree in ${AX_DIR}`);
      continue;
    }
    const found = (text) => {
      if (text === undefined) return undefined;
      const have = wordsOf(text);
      let k = 0;
      for (const w of words) k += have.has(w);
      return k;
    };
    const rgText = snapText(rgObs, 'refgate', n), pwText = snapText(pwObs, 'playwright', n);
    if (rgText === undefined) notes.push(`coverage ${n}: no saved refgate outline`);
    if (pwText === undefined) notes.push(`coverage ${n}: no saved Playwright snapshot`);
    coverageCache.set(n, { words: words.size, rg: found(rgText), pw: found(pwText) });
  }
  return coverageCache;
}

/** Over all pages with both sides: { words, rg, pw } summed, and the pages counted. */
function coverageTotal() {
  const t = { words: 0, rg: 0, pw: 0, pages: 0 };
  for (const c of coverage().values()) {
    if (!isNum(c.rg) || !isNum(c.pw)) continue;
    t.words += c.words;
    t.rg += c.rg;
    t.pw += c.pw;
    t.pages++;
  }
  return t;
}

/** found of words as a percentage, rounded down: 100.0% only when every word was found. */
const pct = (found, words) => (isNum(found) && words > 0 ? `${(Math.floor(1000 * found / words) / 10).toFixed(1)}%` : '-');

function observeTable() {
  if (!rgObs || !pwObs) return;
  const withMcp = !!mcp?.default?.pages;
  console.log(`## observe: refgate's observe (text outline) against Playwright's page.ariaSnapshot({mode: 'ai'})` +
              `${withMcp ? ' and the MCP server\'s browser_snapshot' : ''} (bench/observe.c, bench/peer/observe.mjs, bench/peer/mcp.mjs)`);
  console.log('');
  console.log(`Median of ${rgObs.runs} (refgate) / ${pwObs.runs} (Playwright)${withMcp ? ` / ${mcp.default.pages.controls?.runs ?? '?'} (MCP)` : ''} ` +
              'runs per page' +
              (rgObs.rounds > 1 ? `, refgate's and Playwright's in ${rgObs.rounds} alternating rounds of one run each` : '') +
              ', each on a freshly loaded page (new context, 1280x720, after the load event). ' +
              'first: the first observe after load; second: again at once on the unchanged page (refgate\'s ' +
              'page-side cache answers); later: again 2.5 s after that (the cache still answers on an untouched page: Playwright keeps none). [ms], sizes in bytes.');
  console.log('');
  const header = ['page', 'rg first', 'PW first', 'ratio', 'rg second', 'PW second', 'ratio', 'rg later', 'PW later', 'ratio'];
  if (withMcp) header.push('MCP snap', 'rg 2nd / MCP');
  header.push('rg bytes', 'PW bytes', 'ratio');
  if (withMcp) header.push('MCP bytes', 'ratio');
  header.push('rg/PW refs');
  const rows = [];
  for (const n of obsNames()) {
    const a = obsOf(rgObs, n), b = obsOf(pwObs, n), m = mcpPage(n) ?? {};
    if (a.error) notes.push(`observe ${n}: refgate failed: ${a.error}`);
    if (b.error) notes.push(`observe ${n}: Playwright failed: ${b.error}`);
    if (m.error) notes.push(`observe ${n}: MCP failed: ${m.error}`);
    if (a.truncated) notes.push(`observe ${n}: refgate's observation was truncated at ${rgObs.registry_max} nodes`);
    const row = [n.replace(/\.html$/, ''), num(a.first_ms), num(b.first_ms), r2(ratio(a.first_ms, b.first_ms)),
                 num(a.second_ms), num(b.second_ms), r2(ratio(a.second_ms, b.second_ms)),
                 num(a.later_ms), num(b.later_ms), r2(ratio(a.later_ms, b.later_ms))];
    if (withMcp) row.push(num(m.snapshot_ms), r2(ratio(a.second_ms, m.snapshot_ms)));
    row.push(a.bytes ?? '-', b.bytes ?? '-', r2(ratio(a.bytes, b.bytes)));
    if (withMcp) row.push(m.bytes ?? '-', r2(ratio(a.bytes, m.bytes)));
    row.push(`${a.refs ?? '-'}/${b.refs ?? '-'}`);
    rows.push(row);
  }
  const c = corpusRatios();
  const row = [`median ratio, ${c.n} corpus pages`, '', '', r2(c.first), '', '', r2(c.second), '', '', r2(c.later)];
  if (withMcp) row.push('', r2(c.mcpTime));
  row.push('', '', r2(c.bytes));
  if (withMcp) row.push('', r2(c.mcpBytes));
  row.push('');
  rows.push(row);
  printTable(header, rows);
  console.log('');
  console.log("refs: refgate's are the interactive elements; Playwright's ai mode gives one to nearly every element. " +
              "rg bytes: refgate's default outline (mode full: elements, structure and the page's text), which " +
              "carries the text Playwright's snapshot carries; its size in the interactive mode, the text " +
              'coverage of both and the ratios against their targets are in the next table.');
  console.log('');
}

/** The ratio r against its target max: 2 decimals, 3 when 2 would round a miss down to the target. */
const rr = (r, max) => (isNum(r) && r > max && r.toFixed(2) === max.toFixed(2) ? r.toFixed(3) : r2(r));
/** The ratio r as text, marked when it is above its target max. */
const marked = (r, max) => (isNum(r) ? `${rr(r, max)}${r > max ? ' ✗' : ''}` : '-');

// Issue 19's targets.
const FULL_BYTES_MAX = 0.6, INTER_BYTES_MAX = 0.25, FIRST_MAX = 0.2;
// The test suite's bar for the text coverage of the default outline (issue 19): per page and overall.
const COVER_PAGE_MIN = 0.9, COVER_ALL_MIN = 0.97;

function outlineTable() {
  if (!rgObs || !pwObs) return;
  console.log("## observe: outline size in both modes, the first observe and the text coverage, against Playwright's " +
              "page.ariaSnapshot({mode: 'ai'}) (bench/observe.c, bench/peer/observe.mjs)");
  console.log('');
  console.log("full: refgate's default outline (elements, structure and the page's text); interactive: " +
              "`mode: \"interactive\"`, the elements with refs under their headings and landmarks. Ratios are refgate / " +
              `Playwright; ✗ marks a ratio above its target (full bytes ${FULL_BYTES_MAX}, interactive bytes ` +
              `${INTER_BYTES_MAX}, first observe ${r2(FIRST_MAX)}; the targets hold for the median over the corpus ` +
              'pages and for the 5,000-control page\'s first observe). Coverage: of the distinct words of the page\'s ' +
              "StaticText nodes in Chromium's tree (tests/corpus/pages-ax; lowercased runs of 3 or more " +
              'letters or digits), the share found in the snapshot, by the same tokenizer; ✗ marks refgate below ' +
              `${100 * COVER_PAGE_MIN}% on a page (the test suite's bar: ${100 * COVER_ALL_MIN}% overall, ` +
              `${100 * COVER_PAGE_MIN}% per page). Playwright's snapshot also carries link URLs (/url:), whose ` +
              'words count as found.');
  console.log('');
  const cov = coverage();
  const rows = [];
  const fullR = [], interR = [], firstR = [];
  const miss = { full: [], inter: [], first: [], cover: [] };
  for (const n of obsNames()) {
    const a = obsOf(rgObs, n), b = obsOf(pwObs, n), c = cov.get(n);
    const rf = ratio(a.bytes, b.bytes), ri = ratio(a.interactive_bytes, b.bytes), rt = ratio(a.first_ms, b.first_ms);
    if (n !== 'controls') {
      fullR.push(rf);
      interR.push(ri);
      firstR.push(rt);
    }
    if (isNum(rf) && rf > FULL_BYTES_MAX) miss.full.push(`${pageBase(n)} ${rr(rf, FULL_BYTES_MAX)}`);
    if (isNum(ri) && ri > INTER_BYTES_MAX) miss.inter.push(`${pageBase(n)} ${rr(ri, INTER_BYTES_MAX)}`);
    if (isNum(rt) && rt > FIRST_MAX) miss.first.push(`${pageBase(n)} ${rr(rt, FIRST_MAX)}`);
    if (c && isNum(c.rg) && c.rg / c.words < COVER_PAGE_MIN) miss.cover.push(`${pageBase(n)} ${pct(c.rg, c.words)}`);
    const rgCover = c ? pct(c.rg, c.words) : '-';
    rows.push([pageBase(n), a.bytes ?? '-', a.interactive_bytes ?? '-', b.bytes ?? '-', marked(rf, FULL_BYTES_MAX),
               marked(ri, INTER_BYTES_MAX), num(a.first_ms), num(b.first_ms), marked(rt, FIRST_MAX),
               c ? c.words : '-', c && isNum(c.rg) && c.rg / c.words < COVER_PAGE_MIN ? `${rgCover} ✗` : rgCover,
               c ? pct(c.pw, c.words) : '-']);
  }
  const t = coverageTotal();
  const k = fullR.filter(isNum).length;
  const corpusMedian = (o, key) => num(median(obsNames().filter((n) => n !== 'controls').map((n) => obsOf(o, n)[key])));
  rows.push([`median, ${k} corpus pages`, corpusMedian(rgObs, 'bytes'), corpusMedian(rgObs, 'interactive_bytes'),
             corpusMedian(pwObs, 'bytes'), marked(median(fullR), FULL_BYTES_MAX), marked(median(interR), INTER_BYTES_MAX),
             corpusMedian(rgObs, 'first_ms'), corpusMedian(pwObs, 'first_ms'), marked(median(firstR), FIRST_MAX), '', '', '']);
  rows.push([`all words, ${t.pages} corpus pages`, '', '', '', '', '', '', '', '', t.words,
             t.words ? `${pct(t.rg, t.words)}${t.rg / t.words < COVER_ALL_MIN ? ' ✗' : ''}` : '-', pct(t.pw, t.words)]);
  printTable(['page', 'rg full B', 'rg inter B', 'PW B', 'full/PW', 'inter/PW', 'rg first ms', 'PW first ms',
              'first ratio', 'words', 'rg coverage', 'PW coverage'], rows);
  console.log('');
  console.log('The medians are the medians of the per-page figures (of the ratios, for the ratio columns), over the ' +
              'corpus pages only; the controls page is reported on its own row and in the summary.');
  const list = (xs) => (xs.length ? xs.join(', ') : 'none');
  console.log('');
  console.log('Where refgate misses a target, page by page (the controls page included; the byte targets are ' +
              'for the corpus median, a page above them is where the median loses):');
  console.log('');
  console.log(`- full outline above ${FULL_BYTES_MAX} of Playwright's bytes: ${list(miss.full)}`);
  console.log(`- interactive outline above ${INTER_BYTES_MAX} of Playwright's bytes: ${list(miss.inter)}`);
  console.log(`- first observe above ${r2(FIRST_MAX)} of Playwright's time: ${list(miss.first)}`);
  console.log(`- text coverage below ${100 * COVER_PAGE_MIN}%: ${list(miss.cover)}`);
  const worse = [...cov].filter(([, c]) => isNum(c.rg) && isNum(c.pw) && c.rg < c.pw)
    .map(([n, c]) => `${pageBase(n)} ${pct(c.rg, c.words)} against ${pct(c.pw, c.words)}`);
  console.log(`- text coverage below Playwright's: ${list(worse)}`);
  console.log('');
}

/** Per-page ratios over the corpus pages (not the controls page). */
function corpusRatios() {
  const names = obsNames().filter((n) => n !== 'controls');
  const f = [], s = [], b = [], mt = [], mb = [], lt = [], ib = [];
  let worst, worstName, worstI, worstIName;
  for (const n of names) {
    const a = obsOf(rgObs, n), p = obsOf(pwObs, n), m = mcpPage(n) ?? {};
    f.push(ratio(a.first_ms, p.first_ms));
    s.push(ratio(a.second_ms, p.second_ms));
    lt.push(ratio(a.later_ms, p.later_ms));
    const rb = ratio(a.bytes, p.bytes);
    b.push(rb);
    if (isNum(rb) && (worst === undefined || rb > worst)) {
      worst = rb;
      worstName = n;
    }
    const ri = ratio(a.interactive_bytes, p.bytes);
    ib.push(ri);
    if (isNum(ri) && (worstI === undefined || ri > worstI)) {
      worstI = ri;
      worstIName = n;
    }
    mt.push(ratio(a.second_ms, m.snapshot_ms));
    mb.push(ratio(a.bytes, m.bytes));
  }
  return {
    n: names.length, first: median(f), second: median(s), later: median(lt), bytes: median(b), worstBytes: worst,
    interBytes: median(ib), worstInterBytes: worstI, worstInterName: worstIName,
    firstOver: f.filter((x) => isNum(x) && x > FIRST_MAX).length, firstCounted: f.filter(isNum).length,
    fullOver: b.filter((x) => isNum(x) && x > FULL_BYTES_MAX).length,
    interOver: ib.filter((x) => isNum(x) && x > INTER_BYTES_MAX).length, bytesCounted: b.filter(isNum).length,
    rgInterBytes: median(names.map((n) => obsOf(rgObs, n).interactive_bytes)),
    rgLater: median(names.map((n) => obsOf(rgObs, n).later_ms)),
    pwLater: median(names.map((n) => obsOf(pwObs, n).later_ms)),
    worstName, mcpTime: median(mt), mcpBytes: median(mb),
    rgFirst: median(names.map((n) => obsOf(rgObs, n).first_ms)),
    pwFirst: median(names.map((n) => obsOf(pwObs, n).first_ms)),
    rgSecond: median(names.map((n) => obsOf(rgObs, n).second_ms)),
    pwSecond: median(names.map((n) => obsOf(pwObs, n).second_ms)),
    mcpSnap: median(names.map((n) => mcpPage(n)?.snapshot_ms)),
    rgBytes: median(names.map((n) => obsOf(rgObs, n).bytes)),
    pwBytes: median(names.map((n) => obsOf(pwObs, n).bytes)),
    mcpBytesMed: median(names.map((n) => mcpPage(n)?.bytes)),
  };
}

function clickTable() {
  const g = rgGw?.click;
  console.log('## click by ref');
  console.log('');
  console.log('bench/pages/click.html: the target among 600 other controls, after warm-up clicks. refgate: ' +
              '`click @ref` through nginx (bench/gateway.c) and reg_act in-process below the gateway ' +
              "(bench/click.c); Playwright: page.getByRef(ref).click() (bench/peer/click.mjs); the MCP server's " +
              'browser_click (bench/peer/mcp.mjs), which waits --timeout-settle (500 ms by default) after every action.' +
              (g?.rounds > 1 ? ` Through nginx and Playwright's: ${g.rounds} alternating rounds (each side a fresh ` +
               'browser or stack, 10 warm-ups, then its share of the timed actions), the percentiles over all of them.' : ''));
  console.log('');
  const rows = [];
  const add = (who, c) => {
    if (!c) return;
    rows.push([who, c.clicks ?? '-', `${c.counted ?? '-'}`, num(c.p50_ms), num(c.p99_ms), num(c.min_ms), num(c.max_ms)]);
  };
  add('refgate `click`, through nginx', g);
  add('refgate reg_act, in-process', rgClick);
  add('Playwright getByRef().click()', pwClick);
  add('MCP browser_click', mcp?.default?.click);
  add('MCP browser_click, --timeout-settle 0', mcp?.nosettle?.click);
  printTable(['who', 'clicks', 'page counted', 'p50 [ms]', 'p99 [ms]', 'min', 'max'], rows);
  console.log('');
  // fill and press on the same page's text field, as many times, in the same session or page.
  const acts = [];
  const addAct = (who, c) => {
    if (!c) return;
    acts.push([who, c.n ?? '-', `${c.counted ?? '-'}`, num(c.p50_ms), num(c.p99_ms), num(c.min_ms), num(c.max_ms)]);
  };
  addAct('refgate `fill @ref value "hello"`, through nginx', g?.fill);
  addAct("Playwright getByRef().fill('hello')", pwClick?.fill);
  addAct('refgate `press @ref key "Enter"`, through nginx', g?.press);
  addAct("Playwright getByRef().press('Enter')", pwClick?.press);
  if (acts.length) {
    console.log('fill and press: the text field of the same page (it counts its input events and Enter keys), ' +
                'as many times as the clicks, after 10 warm-ups; refgate in the click\'s session (bench/gateway.c), ' +
                'Playwright on the click\'s page (bench/peer/click.mjs).');
    console.log('');
    printTable(['who', 'times', 'page counted', 'p50 [ms]', 'p99 [ms]', 'min', 'max'], acts);
    console.log('');
  }
}

function loopTable() {
  const a = rgGw?.loop, m = mcp?.default?.loop, z = mcp?.nosettle?.loop;
  if (!a && !m) return;
  console.log('## the agent loop: navigate, observe, click, fill, observe (diff)');
  console.log('');
  console.log('bench/pages/form.html (a checkout form, about 60 controls). refgate: five commands through nginx ' +
              '(bench/gateway.c); MCP: five tool calls over stdio (browser_navigate, browser_snapshot, browser_click, ' +
              'browser_type, browser_snapshot; bench/peer/mcp.mjs). Refs from each loop\'s own observe. [ms], median (min-max).');
  console.log('');
  const steps = ['navigate', 'observe', 'click', 'fill', 'observe_diff'];
  const col = (x, k) => (x ? cell(fig(x.steps[k].median, x.steps[k].min, x.steps[k].max)) : '-');
  const rows = steps.map((k) => [k, col(a, k), col(m, k), col(z, k)]);
  rows.push(['whole loop', a ? cell(fig(a.total_ms.median, a.total_ms.min, a.total_ms.max)) : '-',
             m ? cell(fig(m.total_ms.median, m.total_ms.min, m.total_ms.max)) : '-',
             z ? cell(fig(z.total_ms.median, z.total_ms.min, z.total_ms.max)) : '-']);
  rows.push(['loops timed (all steps ok)', a ? `${a.loops} (${a.ok})` : '-', m ? `${m.loops} (${m.ok})` : '-',
             z ? `${z.loops} (${z.ok})` : '-']);
  rows.push(['text the agent reads per loop [bytes]', a ? a.observe_bytes + a.diff_bytes : '-',
             m ? m.agent_text_bytes : '-', z ? z.agent_text_bytes : '-']);
  printTable(['step', 'refgate', 'MCP (as installed)', 'MCP, settle 0'], rows);
  console.log('');
}

/**
 * The React loop's sides that ran: [name, result] for refgate, refgate-cli, agent-browser, MCP, MCP settle 0,
 * and refgate's own MCP server.
 */
function reactSides() {
  const sides = reactLoop?.sides ?? {};
  const ok = (x) => (x && !x.error ? x : undefined);
  for (const [k, v] of Object.entries(sides)) if (v?.error) notes.push(`React loop: ${k} left out: ${v.error}`);
  return [
    ['refgate, nginx', ok(sides.rg)], ['refgate-cli', ok(sides.cli)], ['agent-browser CLI', ok(sides.ab)],
    ['MCP (as installed)', ok(mcp?.default?.react)], ['MCP, settle 0', ok(mcp?.nosettle?.react)],
    ['refgate MCP (stdio)', ok(sides.mcp)],
  ];
}

function reactLoopTable() {
  const sides = reactSides().filter(([, x]) => x);
  if (!sides.length) return;
  console.log('## the agent loop on a React app: navigate, observe, fill, press Enter, observe, click, observe');
  console.log('');
  console.log('tests/fixtures/react/todo.html (React 18.3.1), served with the same bytes and headers (no-store) to every ' +
              'side. refgate: seven commands through nginx in msgpack on a kept-alive connection; refgate-cli and ' +
              'agent-browser: seven processes, one per command (bench/loop.c, the rounds of the three interleaved); ' +
              'agent-browser observes with `snapshot -i` and acts on `@eN` refs, as its docs tell agents; MCP: six tool ' +
              'calls over stdio, the fill and the Enter being one browser_type with submit (bench/peer/mcp.mjs); refgate MCP: ' +
              'the same six tool calls to `refgate-cli mcp` on the same stack (bench/loop.c). Refs are ' +
              "parsed from each side's own snapshot; a loop is ok when the item's checkbox ends checked. [ms], median (min-max).");
  console.log('');
  const steps = ['navigate', 'observe', 'fill', 'press', 'observe_added', 'click', 'observe_checked'];
  const col = (x, k) => {
    const st = x.steps[k] ?? (k === 'fill' ? x.steps.fill_press : undefined);
    if (!st) return k === 'press' && x.steps.fill_press ? '(in fill)' : '-';
    return cell(fig(st.median, st.min, st.max)) + (k === 'fill' && x.steps.fill_press ? ' (fill + Enter)' : '');
  };
  const rows = steps.map((k) => [k, ...sides.map(([, x]) => col(x, k))]);
  rows.push(['whole loop', ...sides.map(([, x]) => cell(fig(x.total_ms.median, x.total_ms.min, x.total_ms.max)))]);
  rows.push(['whole loop, p90', ...sides.map(([, x]) => num(x.total_ms.p90))]);
  rows.push(['loops timed (ok)', ...sides.map(([, x]) => `${x.loops} (${x.ok})`)]);
  rows.push(['snapshot with the item [bytes]', ...sides.map(([, x]) => String(x.observe_bytes ?? '-'))]);
  printTable(['step', ...sides.map(([n]) => n)], rows);
  const sv = reactLoop?.sides?.rg?.server_steps;
  if (sv)
    console.log(`\nrefgate's worker time per step (the reply's \`ms\`, median): ` +
                steps.map((k) => `${k} ${num(sv[k]?.median)}`).join(', ') + ' ms; the rest of each step is nginx, ' +
                'FastCGI and the client.');
  for (const [n, x] of sides) if (x.ok < x.loops) notes.push(`React loop: ${n}: ${x.loops - x.ok} of ${x.loops} loops failed a check`);
  if (reactLoop?.agent_browser_killed)
    notes.push(`React loop: ${reactLoop.agent_browser_killed} agent-browser processes outlived its close and were killed`);
  console.log('');
}

/**
 * Commands per second of CPU at one level, for a mix of half reads and half
 * clicks (the same mix on both sides, whatever rate each run reached): the
 * driver's CPU (refgate's workers, or Playwright's Node process, named by
 * driverKey) plus the browsers' process trees, per command of each kind.
 */
function coreRate(level, driverKey) {
  if (!level) return undefined;
  let ms = 0;
  for (const k of ['read', 'click']) {
    const r = level[k];
    if (!isNum(r?.[driverKey]) || !isNum(r?.chromium_cpu_ms_per_command)) return undefined;
    ms += (r[driverKey] + r.chromium_cpu_ms_per_command) / 2;
  }
  return ms > 0 ? 1000 / ms : undefined;
}

function parallelTable() {
  const p = rgGw?.parallel;
  if (!p && !pwPar) return;
  console.log('## parallel sessions');
  console.log('');
  console.log(`bench/pages/form.html, one session per client, all at once, ${p?.seconds ?? pwPar?.seconds} s per command and level. ` +
              `refgate: one client thread and kept-alive connection per session, through nginx, ${p?.workers ?? 2} workers ` +
              '(bench/gateway.c); Playwright: one process, one browser, one context per session (bench/peer/parallel.mjs). ' +
              'read: the page text (refgate `read`; Playwright page.evaluate of document.body.innerText); click: ' +
              '`click @addone` / getByRef(ref).click(). PSS: the browsers\' processes, minus the same with no session, per session.');
  console.log('');
  const rows = [];
  const levels = new Set([...(p?.levels ?? []).map((l) => l.sessions), ...(pwPar?.levels ?? []).map((l) => l.sessions)]);
  for (const n of [...levels].sort((x, y) => x - y)) {
    const a = p?.levels.find((l) => l.sessions === n), b = pwPar?.levels.find((l) => l.sessions === n);
    for (const k of ['read', 'click']) {
      rows.push([`${n} sessions, ${k}`, num(a?.[k].per_s), num(b?.[k].per_s), r2(ratio(a?.[k].per_s, b?.[k].per_s)),
                 num(a?.[k].p50_ms), num(b?.[k].p50_ms), num(a?.[k].p99_ms), num(b?.[k].p99_ms),
                 r2(ratio(a?.[k].p99_ms, b?.[k].p99_ms)), `${a?.[k].errors ?? '-'}/${b?.[k].errors ?? '-'}`]);
      if (a?.[k].errors || b?.[k].errors) notes.push(`parallel ${n} ${k}: errors (refgate/Playwright) ${a?.[k].errors}/${b?.[k].errors}`);
    }
    rows.push([`${n} sessions, PSS per session [MiB]`, num(a?.chromium_pss_mib_per_session), num(b?.chromium_pss_mib_per_session),
               r2(ratio(a?.chromium_pss_mib_per_session, b?.chromium_pss_mib_per_session)), '', '', '', '', '', '']);
  }
  printTable(['sessions, command', 'rg cmd/s', 'PW cmd/s', 'ratio', 'rg p50', 'PW p50', 'rg p99', 'PW p99', 'ratio p99', 'errors rg/PW'], rows);
  console.log('');
  const last = p?.levels?.[p.levels.length - 1], lastPw = pwPar?.levels?.[pwPar.levels.length - 1];
  if (last)
    console.log(`Driver processes beside the browsers at ${last.sessions} sessions: refgate's ${p.workers} workers ` +
                `${num(last.workers_pss_kib / 1024)} MiB PSS together (${num(p.base_workers_pss_kib / 1024)} with no session); ` +
                `Playwright's Node process ${lastPw ? num(lastPw.node_pss_kib / 1024) : '-'} MiB. Worker CPU per command ` +
                `(the gateway processes, not Chromium): read ${num(last.read.worker_cpu_ms_per_command)} ms, click ` +
                `${num(last.click.worker_cpu_ms_per_command)} ms; with the browsers' CPU, commands per core-second ` +
                `(half reads, half clicks): refgate ${num(coreRate(last, 'worker_cpu_ms_per_command'))}, Playwright ` +
                `${num(coreRate(lastPw, 'node_cpu_ms_per_command'))}.`);
  console.log('');
}

function gatewayTable() {
  const g = rgGw?.floor, f = rgGw?.fairness;
  if (!g) return;
  console.log("## the gateway's own cost (bench/gateway.c)");
  console.log('');
  console.log(`A trivial command (\`read\` of a one-line page: one Runtime.evaluate) through nginx and a worker, msgpack on a ` +
              `kept-alive connection, ${g.rounds} rounds, against the same evaluate straight down a DevTools pipe.`);
  console.log('');
  printTable(['figure', 'value'], [
    ['raw DevTools evaluate p50 / p99 [ms]', `${num(g.raw_p50_ms)} / ${num(g.raw_p99_ms)}`],
    ['through nginx + gateway p50 / p99 [ms]', `${num(g.gateway_p50_ms)} / ${num(g.gateway_p99_ms)}`],
    ['added by the gateway at p50 (target at most 0.5) [ms]', num(g.added_p50_ms)],
    ["of which inside the worker (the reply's ms, the evaluate included) [ms]", num(g.in_gateway_p50_ms)],
  ]);
  if (g.errors) notes.push(`gateway floor: ${g.errors} commands failed`);
  const o = rgGw?.observe;
  if (o)
    console.log(`\nobserve through nginx on the 5,000-control page, the stack's default registry cap: first ` +
                `${cell(fig(o.first_ms.median, o.first_ms.min, o.first_ms.max))} ms, unchanged ` +
                `${cell(fig(o.second_ms.median, o.second_ms.min, o.second_ms.max))} ms, ${o.bytes} bytes, ${o.refs} refs` +
                `${o.truncated ? ' (truncated: REFGATE_REGISTRY_MAX caps what observe reports)' : ''}; ${o.runs} runs.`);
  if (f)
    console.log(`\nfairness: a quiet tenant's p50 ${num(f.quiet_p50_before_ms)} ms alone, ${num(f.quiet_p50_during_ms)} ms ` +
                `while a noisy tenant sent ${f.noisy_sent} commands in ${f.seconds} s at ten times its rate ` +
                `(${f.noisy_refused} refused): factor ${r2(f.factor)} (target under 2)`);
  console.log('');
}

function parkTable() {
  const r = rgPark;
  if (!r) return;
  console.log('## park and restore (bench/park.c)');
  console.log('');
  console.log(`A page with ${r.refs} refs, cookies, storage and a scroll position; median of ${r.rounds} rounds ` +
              '(min-max), one browser, a private Redis.');
  console.log('');
  printTable(['figure', 'value'], [
    ['cold: create + navigate + observe [ms]', `${num(r.cold_ms)} (${num(r.cold_min_ms)}-${num(r.cold_max_ms)})`],
    ['park [ms]', num(r.park_ms)],
    ['restore to the first observe [ms]', `${num(r.restore_ms)} (${num(r.restore_min_ms)}-${num(r.restore_max_ms)})`],
    ['restore / cold (target at most 1.5)', r2(r.restore_over_cold)],
    ['refs kept / lost at restore', `${r.refs_kept} / ${r.refs_lost}`],
    ['Redis bytes per parked session (target under 65536)', String(r.redis_bytes_parked)],
    ['Redis round trips per observe (target 1)', String(r.redis_round_trips_per_observe)],
  ]);
  if (r.failed) notes.push(`park: ${r.failed} parks failed`);
  console.log('');
}

// ---- the summary ----

function summary() {
  const rows = [];
  /** refgate's figure, the peer, its figure, the target (a ratio limit or a check) and its text. */
  const add = (figure, rg, peer, pv, target) => {
    const r = ratio(rg?.med, pv?.med);
    let t = '';
    if (target) {
      const value = target.on === 'rg' ? rg?.med : r;
      const met = !isNum(value) ? undefined : target.min !== undefined ? value >= target.min : value <= target.max;
      t = `${target.text}: ${met === undefined ? 'not measured' : met ? 'met' : 'MISSED'}`;
    }
    rows.push([figure, cell(rg), peer, cell(pv), r2(r), t]);
  };
  const g = rgGw;
  // The protocol floor and the gateway.
  if (g?.floor) {
    add('trivial command p50, through nginx [ms]', fig(g.floor.gateway_p50_ms), 'raw DevTools evaluate, pipe', fig(g.floor.raw_p50_ms));
    add("gateway's added latency p50 [ms]", fig(g.floor.added_p50_ms), '-', undefined,
        { on: 'rg', max: 0.5, text: 'at most 0.5 ms' });
    if (pwFloor) add('trivial command p50 [ms]', fig(g.floor.gateway_p50_ms), 'Playwright page.evaluate', fig(pwFloor.evaluate_p50_ms));
  }
  if (g?.navigate) {
    const n = g.navigate;
    add('navigate to the load event, form page, through nginx [ms]', fig(n.gateway_ms.median, n.gateway_ms.min, n.gateway_ms.max),
        'raw Page.navigate to load, pipe', fig(n.raw_ms.median, n.raw_ms.min, n.raw_ms.max));
    add('  what the gateway adds to a navigation, p50 [ms]', fig(n.added_p50_ms), '-', undefined,
        { on: 'rg', max: 5, text: 'at most 5 ms' });
  }
  if (g?.navigate_react) {
    const n = g.navigate_react;
    add('navigate to the load event, React page (two scripts), through nginx [ms]',
        fig(n.gateway_ms.median, n.gateway_ms.min, n.gateway_ms.max),
        'raw Page.navigate to load, pipe', fig(n.raw_ms.median, n.raw_ms.min, n.raw_ms.max));
    add('  what the gateway adds to a navigation, p50 [ms]', fig(n.added_p50_ms), '-', undefined,
        { on: 'rg', max: 5, text: 'at most 5 ms' });
  }
  if (g?.create) {
    const cr = g.create.create_ms, pc = pwFloor?.context_paced_ms;
    add(`session.create, ${g.create.gap_ms / 1000} s apart, through nginx [ms]`, fig(cr.median, cr.min, cr.max),
        'Playwright newContext + newPage, as far apart', pc ? fig(pc.median, pc.min, pc.max) : undefined);
  }
  if (rgFloor && pwFloor) add('cold start of a browser [ms]', fig(rgFloor.cold_start_ms), 'Playwright launch', fig(pwFloor.cold_start_ms));
  // Observe.
  const c = rgObs?.controls, pc = pwObs?.controls, mc = mcpPage('controls');
  if (c && !c.error) {
    add('observe, 5,000 controls, in-process, first after load [ms]', fig(c.first_ms, c.first_min, c.first_max),
        "Playwright ariaSnapshot ai", pc && !pc.error ? fig(pc.first_ms, pc.first_min, pc.first_max) : undefined,
        { max: 0.2, text: 'at most 1/5' });
    add('observe, 5,000 controls, in-process, page unchanged [ms]', fig(c.second_ms, c.second_min, c.second_max),
        "Playwright ariaSnapshot ai", pc && !pc.error ? fig(pc.second_ms, pc.second_min, pc.second_max) : undefined,
        { max: 0.2, text: 'at most 1/5' });
    if (isNum(c.later_ms))
      add('observe, 5,000 controls, in-process, unchanged, 2.5 s later [ms]', fig(c.later_ms, c.later_min, c.later_max),
          "Playwright ariaSnapshot ai", pc && !pc.error ? fig(pc.later_ms, pc.later_min, pc.later_max) : undefined,
          { max: 0.2, text: 'at most 1/5' });
    if (isNum(c.added_ms))
      add('observe, 5,000 controls, in-process, after one item added [ms]', fig(c.added_ms, c.added_min, c.added_max),
          "Playwright ariaSnapshot ai", pc && !pc.error && isNum(pc.added_ms) ? fig(pc.added_ms, pc.added_min, pc.added_max) : undefined,
          { max: 0.05, text: 'at most 1/20' });
    if (mc && !mc.error)
      add('observe, 5,000 controls, in-process, page unchanged [ms]', fig(c.second_ms, c.second_min, c.second_max),
          'MCP browser_snapshot', fig(mc.snapshot_ms, mc.snapshot_min, mc.snapshot_max), { max: 0.2, text: 'at most 1/5' });
  }
  const go = g?.observe;
  if (go && pc && !pc.error) {
    const what = go.truncated ? `, truncated at the default cap: ${go.refs} of ${c?.refs ?? '?'} refs` : '';
    add(`observe, 5,000 controls, through nginx${what}, first [ms]`, fig(go.first_ms.median, go.first_ms.min, go.first_ms.max),
        'Playwright ariaSnapshot ai', fig(pc.first_ms, pc.first_min, pc.first_max), { max: 0.2, text: 'at most 1/5' });
    add(`observe, 5,000 controls, through nginx${what}, unchanged [ms]`, fig(go.second_ms.median, go.second_ms.min, go.second_ms.max),
        'Playwright ariaSnapshot ai', fig(pc.second_ms, pc.second_min, pc.second_max), { max: 0.2, text: 'at most 1/5' });
  }
  const cr = rgObs && pwObs ? corpusRatios() : undefined;
  if (cr && cr.n) {
    add(`observe, ${cr.n} corpus pages, first: median per page [ms]`, fig(cr.rgFirst), 'Playwright ariaSnapshot ai', fig(cr.pwFirst));
    rows.push([`  the same: median of the per-page ratios`, '', '', '', r2(cr.first),
               `at most 1/5: ${isNum(cr.first) ? (cr.first <= FIRST_MAX ? 'met' : 'MISSED') : 'not measured'}` +
               ` (${cr.firstOver} of ${cr.firstCounted} pages above)`]);
    add(`observe, ${cr.n} corpus pages, unchanged: median per page [ms]`, fig(cr.rgSecond), 'Playwright ariaSnapshot ai', fig(cr.pwSecond));
    rows.push([`  the same: median of the per-page ratios`, '', '', '', r2(cr.second), '']);
    if (isNum(cr.rgLater)) {
      add(`observe, ${cr.n} corpus pages, unchanged, 2.5 s later: median per page [ms]`, fig(cr.rgLater), 'Playwright ariaSnapshot ai', fig(cr.pwLater));
      rows.push([`  the same: median of the per-page ratios`, '', '', '', r2(cr.later),
                 `at most 1/5: ${isNum(cr.later) ? (cr.later <= 0.2 ? 'met' : 'MISSED') : 'not measured'}`]);
    }
    if (isNum(cr.mcpSnap)) {
      add(`observe, ${cr.n} corpus pages, unchanged: median per page [ms]`, fig(cr.rgSecond), 'MCP browser_snapshot', fig(cr.mcpSnap));
      rows.push([`  the same: median of the per-page ratios`, '', '', '', r2(cr.mcpTime), '']);
    }
  }
  // Snapshot size: refgate's default (full) outline, with the page's text, and the interactive one.
  if (c && !c.error) {
    const tok = (b) => (isNum(b) ? `${Math.round(b)} (${Math.floor(b / 4)} tokens)` : '-');
    const sizeRow = (what, a, peer, b, max) => {
      const r = ratio(a, b);
      const t = max === undefined ? '' : `at most ${max}: ${isNum(r) ? (r <= max ? 'met' : 'MISSED') : 'not measured'}`;
      rows.push([what, tok(a), peer, tok(b), r2(r), t]);
    };
    sizeRow('outline size, full, 5,000 controls [bytes]', c.bytes, 'Playwright ariaSnapshot ai', pc?.bytes);
    sizeRow('outline size, interactive, 5,000 controls [bytes]', c.interactive_bytes, 'Playwright ariaSnapshot ai', pc?.bytes);
    if (mc && !mc.error) sizeRow('outline size, full, 5,000 controls [bytes]', c.bytes, 'MCP browser_snapshot', mc.bytes);
    if (cr && cr.n) {
      sizeRow(`outline size, full, ${cr.n} corpus pages, median [bytes]`, cr.rgBytes, 'Playwright ariaSnapshot ai', cr.pwBytes);
      const over = (k, what) => (k ? `; ${k} of ${cr.bytesCounted} pages above (${what})` : '');
      rows.push([`  the same: median / largest per-page ratio`, '', '', '', `${r2(cr.bytes)} / ${r2(cr.worstBytes)}`,
                 `median at most ${FULL_BYTES_MAX}: ${isNum(cr.bytes) ? (cr.bytes <= FULL_BYTES_MAX ? 'met' : 'MISSED') : 'not measured'}` +
                 over(cr.fullOver, `largest ${pageBase(cr.worstName ?? '')}`)]);
      sizeRow(`outline size, interactive, ${cr.n} corpus pages, median [bytes]`, cr.rgInterBytes, 'Playwright ariaSnapshot ai', cr.pwBytes);
      rows.push([`  the same: median / largest per-page ratio`, '', '', '', `${r2(cr.interBytes)} / ${r2(cr.worstInterBytes)}`,
                 `median at most ${INTER_BYTES_MAX}: ${isNum(cr.interBytes) ? (cr.interBytes <= INTER_BYTES_MAX ? 'met' : 'MISSED') : 'not measured'}` +
                 over(cr.interOver, `largest ${pageBase(cr.worstInterName ?? '')}`)]);
      if (isNum(cr.mcpBytesMed)) sizeRow(`outline size, full, ${cr.n} corpus pages, median [bytes]`, cr.rgBytes, 'MCP browser_snapshot', cr.mcpBytesMed);
      const t = coverageTotal();
      if (t.pages) {
        rows.push([`text coverage, full outline, ${t.pages} corpus pages, all words`, pct(t.rg, t.words), 'Playwright ariaSnapshot ai',
                   pct(t.pw, t.words), r2(ratio(t.rg, t.pw)),
                   `test suite's bar ${100 * COVER_ALL_MIN}%: ${t.rg / t.words >= COVER_ALL_MIN ? 'met' : 'MISSED'}`]);
        const low = [...coverage().values()].filter((x) => isNum(x.rg) && x.rg / x.words < COVER_PAGE_MIN).length;
        const perPage = [...coverage().values()].filter((x) => isNum(x.rg) && isNum(x.pw) && x.words);
        rows.push([`  the same: lowest page`, pct(Math.min(...perPage.map((x) => x.rg / x.words)), 1), '',
                   pct(Math.min(...perPage.map((x) => x.pw / x.words)), 1), '',
                   `${100 * COVER_PAGE_MIN}% per page: ${low ? `MISSED on ${low} of ${perPage.length} pages` : 'met'}`]);
      }
    }
    const lp = g?.loop, ml = mcp?.default?.loop;
    if (lp && ml) sizeRow('snapshot size, the loop\'s form page [bytes]', lp.observe_bytes, 'MCP browser_snapshot', ml.observe_bytes);
  }
  // Click.
  const gc = g?.click;
  const clickFig = (x) => (x ? fig(x.p50_ms, x.min_ms, x.max_ms) : undefined);
  const p99Fig = (x) => (x ? fig(x.p99_ms) : undefined);
  if (gc) {
    add('click by ref p50, through nginx [ms]', clickFig(gc), 'Playwright getByRef().click()', clickFig(pwClick), { max: 0.1, text: 'at most 1/10' });
    add('click by ref p99, through nginx [ms]', p99Fig(gc), 'Playwright getByRef().click()', p99Fig(pwClick), { max: 0.2, text: 'at most 1/5' });
    for (const [k, what] of [['fill', 'fill'], ['press', 'press Enter']]) {
      if (!gc[k]) continue;
      add(`${what} by ref p50, through nginx [ms]`, clickFig(gc[k]), `Playwright getByRef().${k}()`, clickFig(pwClick?.[k]), { max: 0.1, text: 'at most 1/10' });
      add(`${what} by ref p99, through nginx [ms]`, p99Fig(gc[k]), `Playwright getByRef().${k}()`, p99Fig(pwClick?.[k]), { max: 0.2, text: 'at most 1/5' });
    }
    add('click by ref p50, through nginx [ms]', clickFig(gc), 'MCP browser_click', clickFig(mcp?.default?.click), { max: 0.1, text: 'at most 1/10' });
    if (mcp?.nosettle?.click) add('click by ref p50, through nginx [ms]', clickFig(gc), 'MCP browser_click, settle 0', clickFig(mcp.nosettle.click));
  }
  if (rgClick) add('click by ref p50, in-process reg_act [ms]', clickFig(rgClick), 'Playwright getByRef().click()', clickFig(pwClick), { max: 0.1, text: 'at most 1/10' });
  // The agent loop.
  const lp = g?.loop;
  const loopFig = (x) => (x ? fig(x.total_ms.median, x.total_ms.min, x.total_ms.max) : undefined);
  if (lp) {
    add('agent loop, 5 steps [ms]', loopFig(lp), 'MCP, 5 tool calls', loopFig(mcp?.default?.loop), { max: 1 / 3, text: 'at most 1/3' });
    if (mcp?.nosettle?.loop) add('agent loop, 5 steps [ms]', loopFig(lp), 'MCP, 5 tool calls, settle 0', loopFig(mcp.nosettle.loop), { max: 1 / 3, text: 'at most 1/3' });
    if (mcp?.default?.loop)
      add('agent loop, text the agent reads [bytes]', fig(lp.observe_bytes + lp.diff_bytes), 'MCP, 5 tool calls', fig(mcp.default.loop.agent_text_bytes));
  }
  // The agent loop on the React app (issue 20).
  const [[, rl], [, cl], [, ab], [, mr], [, mz], [, rm]] = reactSides();
  const med = (x) => (x ? fig(x.total_ms.median, x.total_ms.min, x.total_ms.max) : undefined);
  const p90 = (x) => (x ? fig(x.total_ms.p90) : undefined);
  if (rl || cl) {
    add('agent loop, React app, through nginx [ms]', med(rl), 'agent-browser CLI', med(ab), { max: 1 / 3, text: 'at most 1/3' });
    add('agent loop, React app, through nginx [ms]', med(rl), 'MCP, 6 tool calls', med(mr), { max: 1 / 10, text: 'at most 1/10' });
    if (mz) add('agent loop, React app, through nginx [ms]', med(rl), 'MCP, 6 tool calls, settle 0', med(mz));
    add('agent loop, React app, refgate-cli [ms]', med(cl), 'agent-browser CLI', med(ab), { max: 1 / 2, text: 'at most 1/2' });
    add('agent loop, React app, refgate-cli [ms]', med(cl), 'MCP, 6 tool calls', med(mr));
    add('  the same, p90: through nginx [ms]', p90(rl), 'agent-browser CLI', p90(ab));
    add('  the same, p90: through nginx [ms]', p90(rl), 'MCP, 6 tool calls', p90(mr));
    add('  the same, p90: refgate-cli [ms]', p90(cl), 'agent-browser CLI', p90(ab));
  }
  // The same loop over MCP stdio, refgate's server against Playwright's (issue 21).
  if (rm) {
    add('agent loop over MCP stdio, React app [ms]', med(rm), 'MCP, 6 tool calls', med(mr), { max: 1 / 5, text: 'at most 1/5' });
    if (mz) add('agent loop over MCP stdio, React app [ms]', med(rm), 'MCP, 6 tool calls, settle 0', med(mz));
  }
  // Parallel sessions and memory.
  const par = g?.parallel;
  for (const l of par?.levels ?? []) {
    const b = pwPar?.levels.find((x) => x.sessions === l.sessions);
    for (const k of ['read', 'click']) {
      add(`${l.sessions} sessions, ${k}: commands/s (higher is better)`, fig(l[k].per_s), 'Playwright, contexts in one process', fig(b?.[k].per_s));
      add(`${l.sessions} sessions, ${k}: p99 [ms]`, fig(l[k].p99_ms), 'Playwright, contexts in one process', fig(b?.[k].p99_ms));
    }
    const rgCore = coreRate(l, 'worker_cpu_ms_per_command'), pwCore = coreRate(b, 'node_cpu_ms_per_command');
    if (l === par.levels[par.levels.length - 1])
      add(`${l.sessions} sessions, half read, half click: commands per core-second (higher is better)`, fig(rgCore),
          'Playwright, contexts in one process', fig(pwCore), { min: 2, text: 'at least 2x' });
    add(`PSS per live session, ${l.sessions} sessions [MiB]`, fig(l.chromium_pss_mib_per_session), 'Playwright PSS per context',
        fig(b?.chromium_pss_mib_per_session));
  }
  if (rgPark) {
    add('Redis bytes per parked session', fig(rgPark.redis_bytes_parked), '-', undefined, { on: 'rg', max: 65535, text: 'under 64 KiB' });
    add('restore to the first observe [ms]', fig(rgPark.restore_ms, rgPark.restore_min_ms, rgPark.restore_max_ms),
        'refgate cold create + navigate + observe', fig(rgPark.cold_ms, rgPark.cold_min_ms, rgPark.cold_max_ms),
        { max: 1.5, text: 'at most 1.5' });
  }
  console.log(`## summary${quick ? ' (quick run: medians only, few repetitions)' : ': median (min-max)'}`);
  console.log('');
  printTable(['figure', 'refgate', 'against', 'their figure', 'ratio', 'target'], rows, ['l', 'r', 'l', 'r', 'r', 'l']);
  console.log('');
  console.log('ratio = refgate / the other; below 1 means refgate is faster or smaller, except for commands/s, ' +
              'where above 1 means refgate does more. Medians unless a percentile is named; min-max are over the ' +
              'repetitions (runs, clicks, loops) of that figure.');
}

heading();
floorTable();
gatewayTable();
observeTable();
outlineTable();
clickTable();
loopTable();
reactLoopTable();
parallelTable();
parkTable();
summary();
if (notes.length) {
  console.log('');
  for (const n of notes) console.log(`note: ${n}`);
}
