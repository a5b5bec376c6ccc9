// rounds.mjs OUT IN... - one observe result out of several rounds of it.
// rounds.mjs --acts KEY OUT IN... - the same for click, fill and press.
//
// bench/run.sh runs the observe benches of both sides in alternating rounds
// (refgate's round 1, Playwright's round 1, refgate's round 2, ...), each
// round one run of every page, so that both sides sample the machine over
// the same minutes. Run one side after the other and a ratio carries
// whatever the machine did between them: the same build's sum of first
// observes moved by 40% over two hours of one idle day (docs/benchmarks.md,
// 7 December, 16:02). This joins one side's round files (the JSON of
// bench/observe.c or bench/peer/observe.mjs) into the file report.mjs reads,
// in the same shape:
//
//   - a timing X (X_ms with X_min and X_max beside it) becomes the median,
//     min and max of the rounds' X_ms (each round's X_ms is its one run when
//     a round is one run, as run.sh runs them);
//   - `min` and `max` follow first_min and first_max, `runs` is the sum;
//   - every other field (bytes, lines, refs, snap, ...) is the last good
//     round's: the pages and the builds are the same in every round;
//   - a page that failed in some rounds is joined from the rounds where it
//     did not (its `rounds_failed` says how many failed); one that failed in
//     all of them keeps the last round's error.
//
// The output has `rounds` (how many files were joined) at its top.
//
// With --acts, the rounds are of the click benches (bench/gateway.c's click
// section, bench/peer/click.mjs), which print each action's times in full
// ("ms", sorted): the click object (the member KEY of each file, or the
// whole file for KEY ".") and its fill and press get the times of every
// round together, their p50, p99, min and max taken again over all of them
// (the nearest rank, as both benches take it), and the counts (clicks, n,
// counted, failed) summed. With a KEY, the joined object replaces that
// member of OUT when OUT exists (the rest of bench/gateway.c's figures),
// else OUT is written with that member alone.

import { readFileSync, writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const acts = args[0] === '--acts' ? (args.shift(), args.shift()) : undefined;
const [out, ...ins] = args;
if (!out || !ins.length || acts === '') {
  console.error('usage: node bench/peer/rounds.mjs [--acts KEY] OUT IN...');
  process.exit(2);
}

const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
const round2 = (v) => Math.round(v * 100) / 100;
function median(xs) {
  const v = [...xs].sort((a, b) => a - b);
  const k = v.length;
  return k % 2 ? v[(k - 1) / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

/** One page's results of every round (undefined where a round lacks it). */
function joinPage(results) {
  const good = results.filter((r) => r && !r.error);
  if (!good.length) return results.findLast((r) => r) ?? { error: 'no round' };
  const page = { ...good[good.length - 1] };
  for (const key of Object.keys(page)) {
    const m = /^(.*)_ms$/.exec(key);
    if (!m || !(`${m[1]}_min` in page) || !(`${m[1]}_max` in page)) continue;
    const xs = good.map((r) => r[key]).filter(isNum);
    if (!xs.length) continue;
    page[key] = round2(median(xs));
    page[`${m[1]}_min`] = round2(Math.min(...xs));
    page[`${m[1]}_max`] = round2(Math.max(...xs));
  }
  if ('first_min' in page) {
    page.min = page.first_min;
    page.max = page.first_max;
  }
  page.runs = good.reduce((n, r) => n + (isNum(r.runs) ? r.runs : 1), 0);
  if (good.length < results.length) page.rounds_failed = results.length - good.length;
  return page;
}

/** One action's rounds (objects with "ms"), joined; fill and press within too. */
function joinActs(objs) {
  const good = objs.filter((o) => o && Array.isArray(o.ms) && o.ms.length);
  if (!good.length) return undefined;
  const joined = { ...good[good.length - 1], rounds: good.length };
  const ms = good.flatMap((o) => o.ms.filter(isNum)).sort((a, b) => a - b);
  const pick = (q) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))];
  Object.assign(joined, { ms, p50_ms: pick(0.5), p99_ms: pick(0.99), min_ms: ms[0], max_ms: ms[ms.length - 1] });
  for (const k of ['clicks', 'n', 'counted', 'failed'])
    if (good.every((o) => isNum(o[k]))) joined[k] = good.reduce((n, o) => n + o[k], 0);
  for (const k of ['fill', 'press']) {
    const sub = joinActs(good.map((o) => o[k]));
    if (sub) joined[k] = sub;
    else delete joined[k];
  }
  return joined;
}

const files = [];
for (const p of ins) {
  try {
    files.push(JSON.parse(readFileSync(p, 'utf8')));
  } catch (err) {
    console.error(`rounds: ${p}: ${err.message} (left out)`);
  }
}
if (!files.length) {
  console.error('rounds: no readable round');
  process.exit(1);
}

if (acts !== undefined) {
  const joined = joinActs(files.map((f) => (acts === '.' ? f : f[acts])));
  if (!joined) {
    console.error('rounds: no round with times');
    process.exit(1);
  }
  let whole = joined;
  if (acts !== '.') {
    whole = {};
    try {
      whole = JSON.parse(readFileSync(out, 'utf8'));
    } catch {
      /* no other figures: the member alone */
    }
    whole[acts] = joined;
  }
  writeFileSync(out, JSON.stringify(whole) + '\n');
  process.exit(0);
}

const joined = { ...files[files.length - 1], rounds: files.length };
joined.runs = files.reduce((n, f) => n + (isNum(f.runs) ? f.runs : 0), 0);
if (files.some((f) => f.controls)) joined.controls = joinPage(files.map((f) => f.controls));
const names = [];
for (const f of files) for (const n of Object.keys(f.pages ?? {})) if (!names.includes(n)) names.push(n);
joined.pages = {};
for (const n of names) joined.pages[n] = joinPage(files.map((f) => f.pages?.[n]));
writeFileSync(out, JSON.stringify(joined) + '\n');
