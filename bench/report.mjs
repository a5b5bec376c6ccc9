// report.mjs REFGATE.json PEER.json - prints the floor figures of refgate
// and Playwright side by side with ratios (refgate / Playwright: below 1 means
// refgate is faster or smaller), with the machine, the date and the versions.
import { readFileSync } from 'node:fs';
import os from 'node:os';

const [rgPath, pwPath] = process.argv.slice(2);
const rg = JSON.parse(readFileSync(rgPath, 'utf8'));
const pw = JSON.parse(readFileSync(pwPath, 'utf8'));

const cpu = os.cpus()[0]?.model ?? 'unknown cpu';
console.log(`refgate floor benchmark, ${new Date().toISOString()}`);
console.log(`machine: ${os.cpus().length} x ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ` +
            `${os.type()} ${os.release()}`);
console.log(`browser: ${rg.chromium} (same binary and flags for both); ` +
            `Playwright: playwright-core ${pw.version}, node ${process.version}`);
console.log('');

const rows = [];
const add = (figure, a, b, unit) => rows.push([figure, a, b, unit]);
add('cold start of a browser', rg.cold_start_ms, pw.cold_start_ms, 'ms');
add('evaluate 1+1 round trip p50', rg.evaluate_p50_ms, pw.evaluate_p50_ms, 'ms');
add('evaluate 1+1 round trip p99', rg.evaluate_p99_ms, pw.evaluate_p99_ms, 'ms');
add('raw pipe round trip p50 (Browser.getVersion)', rg.getversion_p50_ms, undefined, 'ms');
add('raw pipe round trip p99 (Browser.getVersion)', rg.getversion_p99_ms, undefined, 'ms');
for (const n of Object.keys(rg.context_create_ms ?? {}))
  add(`context + page creation, ${n} contexts (median)`, rg.context_create_ms[n],
      pw.context_create_ms?.[n], 'ms');
for (const n of Object.keys(rg.context_pss_mib ?? {}))
  add(`PSS per context, ${n} contexts`, rg.context_pss_mib[n], pw.context_pss_mib?.[n], 'MiB');

const fmt = (v) => (v === undefined || v === null ? '-' : Number(v).toFixed(v < 10 ? 3 : 1));
const header = ['figure', 'refgate', 'Playwright', 'ratio'];
const table = rows.map(([f, a, b, unit]) => [
  `${f} [${unit}]`, fmt(a), fmt(b),
  a !== undefined && b ? (a / b).toFixed(2) : '-',
]);
const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i].length)));
const line = (r) => '| ' + r.map((c, i) => (i ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join(' | ') + ' |';
console.log(line(header));
console.log('|' + widths.map((w, i) => (i ? '-'.repeat(w + 1) + ':' : '-'.repeat(w + 2))).join('|') + '|');
for (const r of table) console.log(line(r));
console.log('');
console.log('ratio = refgate / Playwright; medians unless a percentile is named. ' +
            'Shared, noisy machine: compare ratios, not absolute figures.');
