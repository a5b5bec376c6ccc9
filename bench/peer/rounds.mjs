// rounds.mjs OUT IN... - one observe result out of several rounds of it.
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

import { readFileSync, writeFileSync } from 'node:fs';

const [out, ...ins] = process.argv.slice(2);
if (!out || !ins.length) {
  console.error('usage: node bench/peer/rounds.mjs OUT IN...');
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

const joined = { ...files[files.length - 1], rounds: files.length };
joined.runs = files.reduce((n, f) => n + (isNum(f.runs) ? f.runs : 0), 0);
if (files.some((f) => f.controls)) joined.controls = joinPage(files.map((f) => f.controls));
const names = [];
for (const f of files) for (const n of Object.keys(f.pages ?? {})) if (!names.includes(n)) names.push(n);
joined.pages = {};
for (const n of names) joined.pages[n] = joinPage(files.map((f) => f.pages?.[n]));
writeFileSync(out, JSON.stringify(joined) + '\n');
