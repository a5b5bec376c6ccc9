// report.mjs REFGATE.json PEER.json [REFGATE-OBSERVE.json PEER-OBSERVE.json]
// - prints the floor figures of refgate and Playwright side by side with
// ratios (refgate / Playwright: below 1 means refgate is faster or smaller),
// with the machine, the date and the versions; given the observe results
// (bench/observe.c, bench/peer/observe.mjs) too, a second table: observe
// against Playwright's AI snapshot, per page, with the median ratios.
import { readFileSync } from 'node:fs';
import os from 'node:os';

const [rgPath, pwPath, rgObsPath, pwObsPath, rgClickPath, pwClickPath, rgParkPath, rgGwPath] =
  process.argv.slice(2);
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
/** A Markdown table: the first column left-aligned, the others right-aligned. */
function printTable(header, table) {
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i].length)));
  const line = (r) => '| ' + r.map((c, i) => (i ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join(' | ') + ' |';
  console.log(line(header));
  console.log('|' + widths.map((w, i) => (i ? '-'.repeat(w + 1) + ':' : '-'.repeat(w + 2))).join('|') + '|');
  for (const r of table) console.log(line(r));
}
const header = ['figure', 'refgate', 'Playwright', 'ratio'];
const table = rows.map(([f, a, b, unit]) => [
  `${f} [${unit}]`, fmt(a), fmt(b),
  a !== undefined && b ? (a / b).toFixed(2) : '-',
]);
printTable(header, table);
console.log('');
console.log('ratio = refgate / Playwright; medians unless a percentile is named. ' +
            'Shared, noisy machine: compare ratios, not absolute figures.');

if (rgObsPath && pwObsPath) observeTable();
if (rgClickPath && pwClickPath) clickTable();
if (rgParkPath) parkTable();
if (rgGwPath) gatewayTable();

// The gateway's own cost (bench/gateway.c): nginx + FastCGI + the gateway on a trivial command.
function gatewayTable() {
  const g = JSON.parse(readFileSync(rgGwPath, 'utf8'));
  const p = g.parallel;
  console.log('');
  console.log(`gateway: a trivial command (read of a one-line page) through nginx and a worker, ` +
              `msgpack on a kept-alive connection, ${g.rounds} rounds, against the same evaluate ` +
              'down the DevTools pipe');
  console.log('| figure | value |');
  console.log('|---|---:|');
  console.log(`| raw DevTools evaluate p50 / p99 [ms] | ${g.raw_p50_ms.toFixed(3)} / ${g.raw_p99_ms.toFixed(3)} |`);
  console.log(`| through nginx + gateway p50 / p99 [ms] | ${g.gateway_p50_ms.toFixed(3)} / ${g.gateway_p99_ms.toFixed(3)} |`);
  console.log(`| added by the gateway at p50 (target at most 0.5) [ms] | ${g.added_p50_ms.toFixed(3)} |`);
  console.log(`| of which inside the worker (reply's ms, includes the evaluate) [ms] | ${g.in_gateway_p50_ms.toFixed(3)} |`);
  console.log(`| ${p.sessions} sessions in parallel, ${p.workers} workers: commands/s | ${p.per_s.toFixed(0)} |`);
  console.log(`| the same: p50 / p99 [ms] | ${p.p50_ms.toFixed(2)} / ${p.p99_ms.toFixed(2)} |`);
  console.log(`| worker CPU per command (the gateway processes, not Chromium) [ms] | ${p.worker_cpu_ms_per_command.toFixed(3)} |`);
  if (g.errors || p.errors) console.log(`note: ${g.errors + p.errors} commands failed, see the log`);
  const f = g.fairness;
  if (f)
    console.log(`fairness: a quiet tenant's p50 ${f.quiet_p50_before_ms.toFixed(2)} ms alone, ` +
                `${f.quiet_p50_during_ms.toFixed(2)} ms while a noisy tenant sent ${f.noisy_sent} ` +
                `commands in ${f.seconds} s at ten times its rate (${f.noisy_refused} refused): ` +
                `factor ${f.factor.toFixed(2)} (target under 2)`);
}

// Park and restore (bench/park.c) against refgate's own cold path on the same page.
function parkTable() {
  const r = JSON.parse(readFileSync(rgParkPath, 'utf8'));
  console.log('');
  console.log(`park and restore: a page with ${r.refs} refs, cookies, storage and a scroll ` +
              `position; median of ${r.rounds} rounds (min-max), one browser, private Redis`);
  const mm = (a, lo, hi) => `${a.toFixed(1)} (${lo.toFixed(1)}-${hi.toFixed(1)})`;
  console.log('| figure | value |');
  console.log('|---|---:|');
  console.log(`| cold: create + navigate + observe [ms] | ${mm(r.cold_ms, r.cold_min_ms, r.cold_max_ms)} |`);
  console.log(`| park [ms] | ${r.park_ms.toFixed(1)} |`);
  console.log(`| restore to the first observe [ms] | ${mm(r.restore_ms, r.restore_min_ms, r.restore_max_ms)} |`);
  console.log(`| restore / cold (target at most 1.5) | ${r.restore_over_cold.toFixed(2)} |`);
  console.log(`| refs kept / lost at restore | ${r.refs_kept} / ${r.refs_lost} |`);
  console.log(`| Redis bytes per parked session (target under 65536) | ${r.redis_bytes_parked} |`);
  console.log(`| Redis round trips per observe (target 1) | ${r.redis_round_trips_per_observe} |`);
  if (r.failed) console.log(`note: ${r.failed} parks failed, see the log`);
}

// Click by ref: refgate's click on a ref against page.getByRef(ref).click().
function clickTable() {
  const rc = JSON.parse(readFileSync(rgClickPath, 'utf8'));
  const pc = JSON.parse(readFileSync(pwClickPath, 'utf8'));
  console.log('');
  console.log(`click by ref: ${rc.clicks} clicks on the target of bench/pages/click.html ` +
              `(600 other controls), after 10 warm-up clicks; page counted ` +
              `${rc.counted} (refgate) and ${pc.counted} (Playwright) of ${rc.clicks + 10}`);
  const row = (k) => `| ${k.padEnd(3)} | ${rc[k + '_ms'].toFixed(2).padStart(7)} | ` +
    `${pc[k + '_ms'].toFixed(2).padStart(10)} | ${(rc[k + '_ms'] / pc[k + '_ms']).toFixed(2).padStart(5)} |`;
  console.log('| ms  | refgate | Playwright | ratio |');
  console.log('|-----|--------:|-----------:|------:|');
  console.log(row('p50'));
  console.log(row('p99'));
}

function observeTable() {
  const ro = JSON.parse(readFileSync(rgObsPath, 'utf8'));
  const po = JSON.parse(readFileSync(pwObsPath, 'utf8'));
  const names = [];
  if (ro.controls || po.controls) names.push('controls');
  for (const n of Object.keys(ro.pages ?? {})) names.push(n);
  for (const n of Object.keys(po.pages ?? {})) if (!names.includes(n)) names.push(n);
  const get = (o, n) => (n === 'controls' ? o.controls : o.pages?.[n]) ?? {};
  const ms = (v) => (typeof v === 'number' ? v.toFixed(1) : '-');
  const int = (v) => (typeof v === 'number' ? String(v) : '-');
  const ratio = (a, b) => (typeof a === 'number' && typeof b === 'number' && b > 0 ? a / b : undefined);
  const r2 = (v) => (v === undefined ? '-' : v.toFixed(2));
  const med = (xs) => {
    const v = xs.filter((x) => x !== undefined).sort((a, b) => a - b);
    if (!v.length) return undefined;
    const k = v.length;
    return k % 2 ? v[(k - 1) / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
  };

  console.log('');
  console.log(`observe: refgate's observe (outline) against Playwright's ${po.api ?? 'AI snapshot'}, ` +
              `median of ${ro.runs ?? '?'} / ${po.runs ?? '?'} runs per page, each on a freshly loaded page ` +
              '(new context, 1280x720, after the load event)');
  const header = ['page', 'rg first', 'rg second', 'PW first', 'PW second', 'ratio first',
                  'ratio second', 'rg bytes', 'PW bytes', 'ratio bytes', 'rg/PW refs'];
  const table = [];
  const firsts = [], seconds = [], sizes = [];
  const notes = [];
  for (const n of names) {
    const a = get(ro, n), b = get(po, n);
    const rf = ratio(a.first_ms, b.first_ms), rs = ratio(a.second_ms, b.second_ms);
    const rb = ratio(a.bytes, b.bytes);
    firsts.push(rf);
    seconds.push(rs);
    sizes.push(rb);
    if (a.error) notes.push(`${n}: refgate failed: ${a.error}`);
    if (b.error) notes.push(`${n}: Playwright failed: ${b.error}`);
    if (a.truncated) notes.push(`${n}: refgate's observation was truncated at ${ro.registry_max} nodes`);
    table.push([n.replace(/\.html$/, ''), ms(a.first_ms), ms(a.second_ms), ms(b.first_ms),
                ms(b.second_ms), r2(rf), r2(rs), int(a.bytes), int(b.bytes), r2(rb),
                `${int(a.refs)}/${int(b.refs)}`]);
  }
  table.push([`median ratio over ${names.length} pages`, '', '', '', '', r2(med(firsts)),
              r2(med(seconds)), '', '', r2(med(sizes)), '']);
  printTable(header, table);
  console.log('');
  const c = ro.controls, p = po.controls;
  if (c && p && !c.error && !p.error)
    console.log(`controls page: refgate ${c.tokens} tokens (${c.refs} refs, ${c.nodes} nodes, ` +
                `${c.first_min.toFixed(1)}-${c.first_max.toFixed(1)} ms first), Playwright ` +
                `${p.tokens} tokens (${p.refs} refs, ${p.first_min.toFixed(1)}-` +
                `${p.first_max.toFixed(1)} ms first); tokens = bytes / 4.`);
  const m = po.mcp;
  if (m && !m.error)
    console.log(`Playwright MCP browser_snapshot on the controls page (playwright-core ${po.version}'s ` +
                `server over stdio): ${m.snapshot_ms.toFixed(1)} ms median ` +
                `(${m.snapshot_min.toFixed(1)}-${m.snapshot_max.toFixed(1)}), ${m.bytes} bytes ` +
                `(${m.tokens} tokens); refgate / MCP: ` +
                `${c ? r2(ratio(c.second_ms, m.snapshot_ms)) : '-'} time (refgate second observe), ` +
                `${c ? r2(ratio(c.bytes, m.bytes)) : '-'} bytes.`);
  else if (m) notes.push(`Playwright MCP: ${m.error}`);
  else console.log('Playwright MCP browser_snapshot: not run (full run only).');
  for (const n of notes) console.log(`note: ${n}`);
  console.log('ratio = refgate / Playwright. first: the first observe / snapshot after load ' +
              "(installs the page-side script); second: again on the unchanged page. refs: refgate's " +
              "are interactive elements, Playwright's ai mode gives one to nearly every element.");
}
