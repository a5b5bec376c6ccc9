// Playwright "floor" figures for refgate's benchmark, so bench/floor.c can
// print refgate-vs-Playwright ratios in one run.
//
// Drives Debian's Chromium through playwright-core with the same flags refgate
// gives every browser (pool/spawn.c) and a scratch HOME, and prints ONE JSON
// object on stdout (diagnostics go to stderr):
//   cold_start_ms      median of 3 launches (1 with --quick): chromium.launch() until
//                      browser.version() resolves (each browser closed after)
//   evaluate_p50/p99   one about:blank page in one context: 2000 sequential
//                      page.evaluate('1+1') after 50 warm-ups, per-call wall
//                      time from process.hrtime.bigint()
//   context_create_ms  N = 1, 10, 50 contexts opened one after another
//                      (newContext() then newPage()): median per context
//   context_pss_mib    (PSS of the browser's process tree with the N contexts
//                      open, 1 s after the last one) minus (PSS with none),
//                      divided by N. The tree is every descendant of the
//                      Chromium process Playwright spawned, found through the
//                      ppid field of /proc/*/stat; PSS is the "Pss:" line of
//                      /proc/<pid>/smaps_rollup. The zero-context reading is
//                      taken again before each N, after the previous N's
//                      contexts are closed and their renderers have exited.
//   context_paced_ms   10 contexts (3 with --quick) opened one at a time
//                      (newContext() then newPage()), each closed again and
//                      the next 2 s later, an agent's pace: median, min, max.
//                      The peer of bench/gateway.c's create section
//                      (session.create through nginx at the same pace).
// `--quick` cuts the evaluate calls to 500, the launches to 1 and N to 10.
//
// Usage: node bench/peer/floor.mjs [--quick]   (after sh bench/peer/install.sh)
// REFGATE_CHROMIUM overrides the browser binary.

import { chromium } from 'playwright-core';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EXECUTABLE, FLAGS } from './flags.mjs';
import { childrenOf, median, msSince, pssKiB, round, treeOf } from './common.mjs';

const require = createRequire(import.meta.url);
const PW_VERSION = require('playwright-core/package.json').version;

const quick = process.argv.slice(2).includes('--quick');
const EVAL_WARMUP = 50;
const EVAL_CALLS = quick ? 500 : 2000;
const CONTEXT_COUNTS = quick ? [10] : [1, 10, 50];
const COLD_LAUNCHES = quick ? 1 : 3;
const SETTLE_MS = 1000;
const DEADLINE_MS = 115_000; // the whole run must stay under 2 minutes

const log = (...a) => console.error('floor.mjs:', ...a);

// ---- /proc helpers (the rest are in common.mjs) ----

function argv0(pid) {
    try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
    } catch {
        return null;
    }
}

// ---- statistics ----

/** Nearest-rank percentile. */
function percentile(xs, p) {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)];
}

// ---- browser ----

const home = mkdtempSync(join(tmpdir(), 'refgate-peer-home-'));
const launchOptions = {
    executablePath: EXECUTABLE,
    headless: true,
    args: FLAGS,
    env: { ...process.env, HOME: home },
};
const open = new Set(); // browsers not yet closed, for cleanup on error

async function launch() {
    const browser = await chromium.launch(launchOptions);
    open.add(browser);
    return browser;
}

async function close(browser) {
    open.delete(browser);
    await browser.close();
}

/**
 * The pid of the Chromium process behind `browser`. Playwright's Browser has
 * no process() for launch(), so when it is missing take the child of this node
 * process running the executable that is not in `before`.
 */
function browserPid(browser, before) {
    const proc = typeof browser.process === 'function' ? browser.process() : undefined;
    if (proc && proc.pid) return proc.pid;
    let want;
    try {
        want = realpathSync(EXECUTABLE);
    } catch {
        want = EXECUTABLE;
    }
    const found = childrenOf(process.pid).filter(
        (p) => !before.has(p) && (argv0(p) === EXECUTABLE || argv0(p) === want),
    );
    if (found.length !== 1)
        throw new Error(`expected one new Chromium child of pid ${process.pid}, found ${found.length}`);
    return found[0];
}

/** Wait until the tree of `root` has at most `count` processes (5 s at most). */
async function waitTreeAtMost(root, count) {
    for (let i = 0; i < 50 && treeOf(root).length > count; i++) await sleep(100);
}

// ---- measurements ----

async function coldStart() {
    const times = [];
    for (let i = 0; i < COLD_LAUNCHES; i++) {
        const t0 = process.hrtime.bigint();
        const browser = await launch();
        await browser.version();
        times.push(msSince(t0));
        await close(browser);
    }
    log('cold starts (ms):', times.map((t) => round(t, 1)).join(' '));
    return median(times);
}

async function evaluateLatency(browser) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto('about:blank');
    for (let i = 0; i < EVAL_WARMUP; i++) await page.evaluate('1+1');
    const times = new Array(EVAL_CALLS);
    for (let i = 0; i < EVAL_CALLS; i++) {
        const t0 = process.hrtime.bigint();
        const v = await page.evaluate('1+1');
        times[i] = msSince(t0);
        if (v !== 2) throw new Error(`page.evaluate('1+1') gave ${v}`);
    }
    await context.close();
    return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

async function contexts(browser, root, n) {
    await sleep(SETTLE_MS);
    const baseProcs = treeOf(root);
    const baseKiB = pssKiB(baseProcs);
    const opened = [];
    const times = [];
    try {
        for (let i = 0; i < n; i++) {
            const t0 = process.hrtime.bigint();
            const context = await browser.newContext();
            opened.push(context);
            await context.newPage();
            times.push(msSince(t0));
        }
        await sleep(SETTLE_MS);
        const procs = treeOf(root);
        const kib = pssKiB(procs);
        log(`N=${n}: ${baseProcs.length} -> ${procs.length} processes,`,
            `PSS ${round(baseKiB / 1024, 1)} -> ${round(kib / 1024, 1)} MiB`);
        return { create: median(times), pss: (kib - baseKiB) / 1024 / n };
    } finally {
        for (const c of opened) await c.close();
        await waitTreeAtMost(root, baseProcs.length);
    }
}

// One context and page at a time, PACED_GAP_MS apart, as bench/gateway.c's create section.
const PACED_GAP_MS = 2000;
async function pacedContexts(browser) {
    const times = [];
    for (let i = 0; i < (quick ? 3 : 10); i++) {
        await sleep(PACED_GAP_MS);
        const t0 = process.hrtime.bigint();
        const context = await browser.newContext();
        await context.newPage();
        times.push(msSince(t0));
        await context.close();
    }
    const sorted = [...times].sort((a, b) => a - b);
    return { median: round(median(times), 3), min: round(sorted[0], 3),
             max: round(sorted[sorted.length - 1], 3), rounds: times.length, gap_ms: PACED_GAP_MS };
}

async function main() {
    const result = { version: PW_VERSION };
    result.cold_start_ms = round(await coldStart(), 1);

    const before = new Set(childrenOf(process.pid));
    const browser = await launch();
    const root = browserPid(browser, before);
    log(`chromium ${browser.version()} pid ${root}, playwright-core ${PW_VERSION}`);

    // Runs first, so its context also warms the services (storage, network)
    // that the first context of a browser starts: those are not per-context.
    const ev = await evaluateLatency(browser);
    result.evaluate_p50_ms = round(ev.p50, 3);
    result.evaluate_p99_ms = round(ev.p99, 3);

    result.context_create_ms = {};
    result.context_pss_mib = {};
    for (const n of CONTEXT_COUNTS) {
        const r = await contexts(browser, root, n);
        result.context_create_ms[n] = round(r.create, 2);
        result.context_pss_mib[n] = round(r.pss, 2);
    }
    result.context_paced_ms = await pacedContexts(browser);
    await close(browser);
    return result;
}

const watchdog = setTimeout(() => {
    log(`gave up after ${DEADLINE_MS / 1000} s`);
    // Playwright kills the browsers it launched when the process exits.
    rmSync(home, { recursive: true, force: true });
    process.exit(1);
}, DEADLINE_MS);
watchdog.unref();

let status = 0;
try {
    const result = await main();
    process.stdout.write(JSON.stringify(result) + '\n');
} catch (err) {
    log(err && err.stack ? err.stack : String(err));
    status = 1;
} finally {
    for (const b of open) await b.close().catch(() => {});
    clearTimeout(watchdog);
    rmSync(home, { recursive: true, force: true });
}
process.exitCode = status;
