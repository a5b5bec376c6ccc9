// Playwright's side of refgate's observe benchmark (bench/observe.c): the AI
// snapshot of the same pages, timed the same way.
//
// The snapshot is page.ariaSnapshot({ mode: 'ai' }), playwright-core 1.65.1's
// documented AI mode (YAML with [ref=eN] on elements, iframes included). It is
// what Playwright's MCP server runs for browser_snapshot: Tab.captureSnapshot
// in playwright-core's lib/coreBundle.js calls page.ariaSnapshot({ mode: "ai",
// depth, boxes }), without depth and boxes for a plain browser_snapshot.
//
// Pages: bench/pages/controls.html (5,000 controls) and every page of
// tests/corpus/pages/, served over loopback by a small static server in
// this process (same bytes, same Content-Type as refgate's test httpd).
// Chromium: Debian's binary with the flags of bench/peer/floor.mjs, plus the
// --host-resolver-rules refgate's observe.c gives its pool, so remote hosts
// fail at once on both sides.
//
// For each page, `runs` times: a fresh context (newContext + newPage, the
// default 1280x720 viewport), page.goto(url) until the load event, then two
// snapshots timed with process.hrtime.bigint():
//   first   the first snapshot after load (injects Playwright's script)
//   second  again on the unchanged page
//   later   again 2.5 s after the second (refgate's page-side cache still
//           answers then on an untouched page; Playwright has none), not
//           with --quick
//   added   after ADD_JS added one item to the page (refgate's observer
//           walks again only what changed; Playwright walks it all)
// Before the pages, one run on a small page (/warmup, the fixture page
// refgate's httpd serves) warms the browser up and is not counted (observe.c
// does the same).
//
// Playwright's MCP server's browser_snapshot on the same pages is
// bench/peer/mcp.mjs.
//
// Prints one JSON object on stdout (diagnostics go to stderr), with the keys
// of observe.c: controls and pages.<name> with first_ms, first_min,
// first_max, second_ms, second_min, second_max, bytes, tokens (bytes / 4),
// lines and refs.
//
// With --snap DIR, the last run's first snapshot of each page is written to
// DIR/playwright/<page>.txt, <page> the file name without .html ("controls"
// for the controls page), as observe.c writes refgate's outlines beside it,
// and the JSON names it (snap); bench/peer/report.mjs measures the text coverage
// of both sides from these files, with one tokenizer.
//
// Usage: node bench/peer/observe.mjs [--quick] [--runs N] [--pages DIR]
//            [--corpus DIR] [--snap DIR] [PAGE...]
//   PAGE is "controls" or a file name in the corpus; default: all of them.
//   Runs: 5, or 1 with --quick. Run from the repository root.

import { chromium } from 'playwright-core';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
    log as logger, median, msSince, pageNames, round, runMain, startServer, urlOf,
} from './common.mjs';
import { EXECUTABLE, FLAGS as BASE_FLAGS, RESOLVER } from './flags.mjs';

const require = createRequire(import.meta.url);
const PW_VERSION = require('playwright-core/package.json').version;

// refgate's flags (flags.mjs) and the resolver rule for the corpus pages.
const FLAGS = [...BASE_FLAGS, RESOLVER];

const log = logger('observe.mjs');
// The wait before the third snapshot, as bench/observe.c waits before its third observe.
const LATER_MS = 2500;
// One item added before the fourth snapshot, as bench/observe.c adds it (ADD_JS there).
const ADD_JS = "(function(){var s=document.querySelector('main section')||document.body;" +
    "var u=s.querySelector('ul,ol')||s;var li=document.createElement(u===s?'div':'li');" +
    "li.innerHTML='<a href=\"#added\">Added item</a>';u.appendChild(li);return true})()";

// ---- arguments ----

let runs = 5;
let later = true; // the third snapshot, 2.5 s after the second (not with --quick)
let pagesDir = 'bench/pages';
let corpusDir = 'tests/corpus/pages';
let snapDir; // --snap: where the snapshots go (undefined: not written)
let names = [];
{
    const argv = process.argv.slice(2);
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === '--quick') {
            runs = 1;
            later = false;
        }
        else if (a === '--runs') runs = Number(argv[++i]);
        else if (a === '--pages') pagesDir = argv[++i];
        else if (a === '--corpus') corpusDir = argv[++i];
        else if (a === '--snap') snapDir = argv[++i];
        else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
        else names.push(a);
    }
    if (!(runs >= 1 && runs <= 50)) throw new Error('--runs wants 1..50');
    names = pageNames(names, corpusDir, log);
}

// ---- statistics ----

const countOf = (s, needle) => s.split(needle).length - 1;

function summary(first, second, thirds, addeds, text) {
    const bytes = Buffer.byteLength(text, 'utf8');
    return {
        first_ms: round(median(first)), first_min: round(Math.min(...first)),
        first_max: round(Math.max(...first)),
        second_ms: round(median(second)), second_min: round(Math.min(...second)),
        second_max: round(Math.max(...second)),
        ...(thirds.length ? {
            later_ms: round(median(thirds)), later_min: round(Math.min(...thirds)),
            later_max: round(Math.max(...thirds)),
        } : {}),
        added_ms: round(median(addeds)), added_min: round(Math.min(...addeds)),
        added_max: round(Math.max(...addeds)),
        min: round(Math.min(...first)), max: round(Math.max(...first)),
        runs: first.length, bytes, tokens: Math.floor(bytes / 4),
        lines: countOf(text, '\n') + (text.endsWith('\n') ? 0 : 1),
        refs: countOf(text, '[ref='),
    };
}

// ---- one page through playwright-core ----

async function runOnce(browser, url) {
    const context = await browser.newContext();
    try {
        const page = await context.newPage();
        await page.goto(url, { waitUntil: 'load', timeout: 30_000 });
        let t0 = process.hrtime.bigint();
        const a = await page.ariaSnapshot({ mode: 'ai', timeout: 60_000 });
        const first = msSince(t0);
        t0 = process.hrtime.bigint();
        const b = await page.ariaSnapshot({ mode: 'ai', timeout: 60_000 });
        const second = msSince(t0);
        let third;
        if (later) {
            await sleep(LATER_MS);
            t0 = process.hrtime.bigint();
            await page.ariaSnapshot({ mode: 'ai', timeout: 60_000 });
            third = msSince(t0);
        }
        await page.evaluate(ADD_JS);
        t0 = process.hrtime.bigint();
        await page.ariaSnapshot({ mode: 'ai', timeout: 60_000 });
        const added = msSince(t0);
        if (a.length !== b.length) log(`${url}: the second snapshot differs in size`);
        if (process.env.RG_BENCH_DUMP) console.error(a);
        return { first, second, later: third, added, text: a };
    } finally {
        await context.close();
    }
}

async function measure(browser, url, name) {
    const first = [], second = [], thirds = [], addeds = [];
    let text = '';
    for (let i = 0; i < runs; i++) {
        const r = await runOnce(browser, url);
        first.push(r.first);
        second.push(r.second);
        if (r.later !== undefined) thirds.push(r.later);
        addeds.push(r.added);
        text = r.text;
    }
    const result = summary(first, second, thirds, addeds, text);
    if (snapDir) result.snap = writeSnap(name, text);
    return result;
}

/** Writes a page's snapshot to <snapDir>/playwright/<page>.txt; returns the path. */
function writeSnap(name, text) {
    const dir = join(snapDir, 'playwright');
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `${name.replace(/\.html$/, '')}.txt`);
    writeFileSync(path, text);
    return path;
}

// ---- main ----

async function main(work) {
    const server = await startServer(pagesDir, corpusDir);
    const result = { version: PW_VERSION, api: "page.ariaSnapshot({ mode: 'ai' })", runs };
    const browser = await chromium.launch({
        executablePath: EXECUTABLE, headless: true, args: FLAGS,
        env: { ...process.env, HOME: work },
    });
    try {
        log(`chromium ${browser.version()}, playwright-core ${PW_VERSION}, ${runs} runs`);
        await runOnce(browser, urlOf(server, 'warmup')); // warm-up, not counted
        result.pages = {};
        for (const name of names) {
            const t0 = process.hrtime.bigint();
            let r;
            try {
                r = await measure(browser, urlOf(server, name), name);
                log(`${name}: first ${r.first_ms} ms, second ${r.second_ms} ms, ${r.bytes} bytes`,
                    `(${Math.round(msSince(t0))} ms)`);
            } catch (err) {
                r = { error: String(err.message ?? err).split('\n')[0] };
                log(`${name}: ${r.error}`);
            }
            if (name === 'controls') result.controls = r;
            else result.pages[name] = r;
        }
    } finally {
        await browser.close();
    }
    server.close();
    return result;
}

await runMain('refgate-peer-obs-', main, log);
