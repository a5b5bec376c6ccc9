// click.mjs [--quick] [--clicks N] - Playwright's click by ref:
// page.ariaSnapshot({mode: 'ai'}) for the refs, then
// page.getByRef(ref).click() on the target of bench/pages/click.html, 10
// warm-up clicks then 200 (30 with --quick, N with --clicks) timed ones; same
// Chromium binary and flags as floor.mjs. Then, as many times,
// getByRef(ref).fill('hello') and getByRef(ref).press('Enter') on the page's
// text field (bench/gateway.c does the same through refgate). Prints one
// JSON object, with each action's times also in full, sorted ("ms"), for
// bench/peer/rounds.mjs: bench/run.sh runs this in rounds, taking turns
// with bench/gateway.c's click section.
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXECUTABLE, FLAGS } from './flags.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const at = process.argv.indexOf('--clicks');
const clicks = at > 0 ? Number(process.argv[at + 1]) : process.argv.includes('--quick') ? 30 : 200;
if (!(Number.isInteger(clicks) && clicks >= 1 && clicks <= 100000)) throw new Error('--clicks wants 1..100000');
const html = readFileSync(join(here, '..', 'pages', 'click.html'));
const server = createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(html);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const home = mkdtempSync(join(tmpdir(), 'rg-pw-click-'));
const browser = await chromium.launch({
  executablePath: EXECUTABLE,
  headless: true,
  env: { ...process.env, HOME: home },
  args: FLAGS,
});
try {
  const page = await (await browser.newContext()).newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/click.html`);
  const snap = await page.ariaSnapshot({ mode: 'ai' });
  const m = /button "Target" \[ref=([^\]]+)\]/.exec(snap);
  const f = /textbox "Field" \[ref=([^\]]+)\]/.exec(snap);
  if (!m || !f) throw new Error('no ref for the target or the field in the snapshot');
  // 10 warm-ups then `clicks` timed runs of act(); sorted times [ms].
  const timed = async (act) => {
    const times = [];
    for (let i = 0; i < 10 + clicks; i++) {
      const t0 = process.hrtime.bigint();
      await act();
      if (i >= 10) times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    return times.sort((a, b) => a - b);
  };
  const summary = (times) => {
    const pick = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
    return { p50_ms: pick(0.5), p99_ms: pick(0.99), min_ms: times[0], max_ms: times[times.length - 1],
             ms: times.map((t) => Math.round(t * 1000) / 1000) };
  };
  const times = await timed(() => page.getByRef(m[1]).click());
  const counted = Number(await page.textContent('#count'));
  const fills = await timed(() => page.getByRef(f[1]).fill('hello'));
  const filled = Number(await page.textContent('#fills'));
  const presses = await timed(() => page.getByRef(f[1]).press('Enter'));
  const pressed = Number(await page.textContent('#presses'));
  console.log(JSON.stringify({ ref: m[1], clicks, counted, ...summary(times),
                               fill: { ref: f[1], n: clicks, counted: filled, ...summary(fills) },
                               press: { ref: f[1], n: clicks, counted: pressed, ...summary(presses) } }));
} finally {
  await browser.close();
  server.close();
  rmSync(home, { recursive: true, force: true });
}
