// parallel.mjs - Playwright's side of bench/gateway.c's parallel sessions:
// one Node process, one browser, one context (with one page) per session,
// the way a user of playwright-core runs many sessions at once.
//
// Page: bench/pages/form.html. Each context: newContext, newPage, goto until
// the load event, one page.ariaSnapshot({mode: 'ai'}) for the ref of "Add
// one". Then at 8, 16 and 32 sessions (contexts added as needed), every
// session runs as fast as it can, for `secs` seconds each:
//   read   page.evaluate(() => document.body.innerText): refgate's `read`
//          without a target is the same text, one Runtime.evaluate
//   click  page.getByRef(ref).click(): refgate's `click @addone`
// and reports commands/s, p50 and p99 of the per-command times (nearest
// rank, as gateway.c), errors, and the CPU per command of the Node process
// and, apart, of the browser's process tree (as gateway.c counts its workers
// and their browsers).
//
// Memory, at each level after its run and one second of rest: PSS (the "Pss:"
// line of /proc/<pid>/smaps_rollup) of the browser's whole process tree,
// minus the same with no context open (measured before the first context,
// after a warm-up context was opened and closed), per session. The Node
// process's own PSS is reported beside it.
//
// Same Chromium binary and flags as refgate (flags.mjs). Prints one JSON
// object on stdout. Measures; asserts nothing.
//
// Usage: node bench/peer/parallel.mjs [--quick] [--secs S] [--levels 8,16,32]
//   --quick: 8 sessions only, 2 s per command (as gateway.c --quick).

import { chromium } from 'playwright-core';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import {
    chromiumChildren, cpuMs, log as logger, msSince, now, pssKiB, quantile, round, startServer,
    runMain, treeOf, urlOf,
} from './common.mjs';
import { EXECUTABLE, FLAGS } from './flags.mjs';

const require = createRequire(import.meta.url);
const PW_VERSION = require('playwright-core/package.json').version;
const log = logger('parallel.mjs');

let secs = 10;
let levels = [8, 16, 32];
{
    const argv = process.argv.slice(2);
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === '--quick') {
            secs = 2;
            levels = [8];
        }
        else if (a === '--secs') secs = Number(argv[++i]);
        else if (a === '--levels') levels = argv[++i].split(',').map(Number);
        else throw new Error(`unknown option ${a}`);
    }
}

async function openSession(browser, url) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url, { waitUntil: 'load' });
    const snap = await page.ariaSnapshot({ mode: 'ai' });
    const m = /button "Add one" \[ref=([^\]]+)\]/.exec(snap);
    if (!m) throw new Error('no ref for "Add one" in the snapshot');
    return { context, page, ref: m[1] };
}

/** Every session runs op(session) back to back until the deadline. */
async function runLevel(sessions, op, root) {
    const lat = [];
    let errors = 0;
    const procs = treeOf(root);
    const node0 = process.cpuUsage(), ch0 = cpuMs(procs);
    const t0 = now();
    const until = Date.now() + secs * 1000;
    await Promise.all(sessions.map(async (s) => {
        while (Date.now() < until) {
            const c0 = now();
            try {
                await op(s);
            } catch {
                errors++;
            }
            lat.push(msSince(c0));
        }
    }));
    const seconds = msSince(t0) / 1000;
    const node = process.cpuUsage(node0), ch = cpuMs(procs) - ch0;
    const per = (ms) => (lat.length ? round(ms / lat.length, 3) : 0);
    return {
        node_cpu_ms_per_command: per((node.user + node.system) / 1000),
        chromium_cpu_ms_per_command: per(ch),
        commands: lat.length, errors, seconds: round(seconds, 2),
        per_s: round(lat.length / seconds, 1), p50_ms: round(quantile(lat, 0.5)),
        p99_ms: round(quantile(lat, 0.99)),
    };
}

async function main(home) {
    const server = await startServer();
    const before = new Set(chromiumChildren(process.pid));
    const browser = await chromium.launch({
        executablePath: EXECUTABLE, headless: true, args: FLAGS, env: { ...process.env, HOME: home },
    });
    try {
        const roots = chromiumChildren(process.pid).filter((p) => !before.has(p));
        if (roots.length !== 1) throw new Error(`expected one new Chromium, found ${roots.length}`);
        const root = roots[0];
        const url = urlOf(server, 'form');
        // Warm-up: the first context starts the browser's shared services.
        const w = await openSession(browser, url);
        await w.context.close();
        await sleep(2000);
        const base = pssKiB(treeOf(root));
        log(`chromium ${browser.version()}, no context: PSS ${round(base / 1024, 1)} MiB`);
        const result = {
            version: PW_VERSION, chromium: browser.version(), seconds: secs,
            base_chromium_pss_kib: base, levels: [],
        };
        const sessions = [];
        for (const n of levels) {
            const t0 = Date.now();
            // The new sessions open 4 at a time, as gateway.c opens its own.
            while (sessions.length < n) {
                const more = [];
                for (let i = sessions.length; i < n && more.length < 4; i++)
                    more.push(openSession(browser, url));
                sessions.push(...(await Promise.all(more)));
            }
            const opened = Date.now() - t0;
            const read = await runLevel(sessions, (s) => s.page.evaluate(() => document.body.innerText),
                                        root);
            const click = await runLevel(sessions, (s) => s.page.getByRef(s.ref).click(), root);
            await sleep(1000);
            const procs = treeOf(root);
            const pss = pssKiB(procs);
            const level = {
                sessions: n, read, click, chromium_pss_kib: pss, processes: procs.length,
                chromium_pss_mib_per_session: round((pss - base) / 1024 / n, 2),
                node_pss_kib: pssKiB([process.pid]),
            };
            result.levels.push(level);
            log(`${n} sessions (opened in ${opened} ms): read ${read.per_s}/s p99 ${read.p99_ms} ms,`,
                `click ${click.per_s}/s p99 ${click.p99_ms} ms, PSS ${round(pss / 1024, 1)} MiB`);
        }
        for (const s of sessions) await s.context.close();
        return result;
    } finally {
        await browser.close();
        server.close();
    }
}

await runMain('refgate-peer-par-', main, log);
