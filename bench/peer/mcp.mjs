// mcp.mjs - Playwright's MCP server (`@playwright/mcp`, the package an agent
// developer installs) driven over stdio JSON-RPC the way an agent drives it,
// for the figures bench/gateway.c measures through refgate:
//
//   loop      the agent loop on bench/pages/form.html as five tool calls:
//             browser_navigate, browser_snapshot, browser_click on "Add a
//             delivery note" by its ref, browser_type "agent@example.com"
//             into "Email address" by its ref (it fills, as refgate's fill
//             does), browser_snapshot; the refs come from each loop's own
//             snapshot; one warm-up loop, then `loops` timed ones
//   react     issue 20's agent loop on the React todo list
//             (tests/fixtures/react/todo.html, served as bench/loop.c serves
//             it to refgate and agent-browser), as six tool calls:
//             browser_navigate, browser_snapshot, browser_type "Buy milk"
//             into the new-todo box by its ref with submit: true (the fill
//             and the Enter in one call, as the tool offers it: one action
//             fewer, so one settle wait fewer, than two calls), browser_snapshot (the
//             item must be in it), browser_click on the item's checkbox by
//             its ref, browser_snapshot (the item's checkbox, found again,
//             must be checked). Refs are read from the snapshots as loop.c
//             reads its sides'. One warm-up loop, then `reacts` timed ones:
//             median and p90.
//   click     browser_click on the target of bench/pages/click.html by its
//             ref, 3 warm-up clicks, then `clicks` timed ones; the page's
//             counter is read at the end with browser_evaluate
//   snapshot  per page (bench/pages/controls.html and the corpus pages),
//             `runs` times: browser_navigate, then browser_snapshot timed.
//             browser_navigate already takes a snapshot (into a file under
//             --output-dir; its reply holds only the link), so
//             browser_snapshot is the second snapshot of the loaded page.
//             Size: the tool result's text (the snapshot in a YAML block
//             under a short page header), what the agent reads.
//
// The server runs twice: as installed (settle: its default --timeout-settle,
// 500 ms, which every action waits after it acts, before it replies), and
// with --timeout-settle 0, so the report can show how much of the server's
// time is that wait. The second run does only loop, react and click.
//
// Same Chromium binary and flags as refgate (flags.mjs), headless, an
// in-memory profile (--isolated), a 1280x720 viewport.
//
// Prints one JSON object on stdout; diagnostics on stderr.
//
// Usage: node bench/peer/mcp.mjs [--quick] [--loops N] [--reacts N] [--clicks N]
//            [--runs N] [--only SECTION,...] [--no-snapshot] [--no-nosettle]
//            [--corpus DIR] [PAGE...]
//   PAGE: "controls" or a corpus file name (default: all of them).
//   --only: these sections only (loop, react, click, snapshot).
//   --quick: 3 loops, 3 React loops, 5 clicks, no page snapshots, no second server.

import {
    checkboxNear, log as logger, mmm, MCP_CORE_VERSION, MCP_VERSION, median, pageNames, quantile,
    refIn, round, runMain, startMcp, startServer, urlOf,
} from './common.mjs';

const log = logger('mcp.mjs');

let loops = 10, reacts = 20, clicks = 50, runs = 3, snapshots = true, nosettle = true;
let only;
let corpusDir = 'tests/corpus/pages';
const args = [];
{
    const argv = process.argv.slice(2);
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === '--quick') {
            loops = 3;
            reacts = 3;
            clicks = 5;
            snapshots = false;
            nosettle = false;
        } else if (a === '--loops') loops = Number(argv[++i]);
        else if (a === '--reacts') reacts = Number(argv[++i]);
        else if (a === '--only') only = argv[++i].split(',');
        else if (a === '--clicks') clicks = Number(argv[++i]);
        else if (a === '--runs') runs = Number(argv[++i]);
        else if (a === '--no-snapshot') snapshots = false;
        else if (a === '--no-nosettle') nosettle = false;
        else if (a === '--corpus') corpusDir = argv[++i];
        else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
        else args.push(a);
    }
}

const bytesOf = (s) => Buffer.byteLength(s, 'utf8');
const wanted = (section) => !only || only.includes(section);

async function loopOnce(mcp, url) {
    const t = {};
    const texts = [];
    let r = await mcp.call('browser_navigate', { url });
    t.navigate = r.ms;
    texts.push(r.text);
    r = await mcp.call('browser_snapshot');
    t.observe = r.ms;
    texts.push(r.text);
    const snapshot = r.text;
    const note = refIn(snapshot, 'button "Add a delivery note"');
    const email = refIn(snapshot, 'textbox "Email address"');
    if (!note || !email) throw new Error('loop: the refs are not in the snapshot');
    r = await mcp.call('browser_click', { element: 'Add a delivery note button', target: note });
    t.click = r.ms;
    texts.push(r.text);
    r = await mcp.call('browser_type', {
        element: 'Email address textbox', target: email, text: 'agent@example.com',
    });
    t.fill = r.ms;
    texts.push(r.text);
    r = await mcp.call('browser_snapshot');
    t.observe_diff = r.ms;
    texts.push(r.text);
    const ok = r.text.includes('Note for the driver') && r.text.includes('agent@example.com');
    return {
        t, ok, observeBytes: bytesOf(snapshot), lastBytes: bytesOf(r.text),
        agentBytes: texts.reduce((n, s) => n + bytesOf(s), 0),
    };
}

async function runLoop(mcp, url, n) {
    await loopOnce(mcp, url); // warm-up: starts the browser
    const steps = { navigate: [], observe: [], click: [], fill: [], observe_diff: [] };
    const total = [];
    let ok = 0, last;
    for (let i = 0; i < n; i++) {
        last = await loopOnce(mcp, url);
        ok += last.ok;
        let sum = 0;
        for (const k of Object.keys(steps)) {
            steps[k].push(last.t[k]);
            sum += last.t[k];
        }
        total.push(sum);
    }
    const out = { loops: n, ok, total_ms: mmm(total), steps: {} };
    for (const k of Object.keys(steps)) out.steps[k] = mmm(steps[k]);
    out.observe_bytes = last.observeBytes;
    out.diff_bytes = last.lastBytes;
    out.agent_text_bytes = last.agentBytes;
    return out;
}

const ITEM = 'Buy milk';

/** One React loop; throws when a ref is missing, ok says whether the item ended checked. */
async function reactOnce(mcp, url) {
    const t = {};
    t.navigate = (await mcp.call('browser_navigate', { url })).ms;
    let r = await mcp.call('browser_snapshot');
    t.observe = r.ms;
    const box = refIn(r.text, 'textbox "What needs to be done?"');
    if (!box) throw new Error(`react: no ref for the new-todo box in ${r.text.slice(0, 300)}`);
    r = await mcp.call('browser_type', {
        element: 'What needs to be done? textbox', target: box, text: ITEM, submit: true,
    });
    t.fill_press = r.ms;
    r = await mcp.call('browser_snapshot');
    t.observe_added = r.ms;
    const observeBytes = bytesOf(r.text);
    const check = checkboxNear(r.text, ITEM);
    if (!check) throw new Error(`react: no item or no checkbox in ${r.text.slice(0, 300)}`);
    t.click = (await mcp.call('browser_click', { element: `${ITEM} checkbox`, target: check.ref })).ms;
    r = await mcp.call('browser_snapshot');
    t.observe_checked = r.ms;
    const again = checkboxNear(r.text, ITEM);
    const ok = !!again && /\[checked(\]|=true)/.test(again.line);
    if (!ok) log(`react: the item's checkbox is not checked in ${r.text.slice(0, 300)}`);
    return { t, ok, observeBytes };
}

/** { median, p90, min, max } of xs, rounded. */
const mp = (xs) => ({ ...mmm(xs), p90: round(quantile(xs, 0.9)) });

async function runReact(mcp, url, n) {
    await reactOnce(mcp, url); // warm-up
    const steps = { navigate: [], observe: [], fill_press: [], observe_added: [], click: [], observe_checked: [] };
    const total = [];
    let ok = 0, observeBytes;
    for (let i = 0; i < n; i++) {
        const one = await reactOnce(mcp, url);
        ok += one.ok;
        observeBytes = one.observeBytes;
        let sum = 0;
        for (const k of Object.keys(steps)) {
            steps[k].push(one.t[k]);
            sum += one.t[k];
        }
        total.push(sum);
    }
    const out = { loops: n, ok, failed: n - ok, observe_bytes: observeBytes, total_ms: mp(total), steps: {} };
    for (const k of Object.keys(steps)) out.steps[k] = mp(steps[k]);
    return out;
}

async function runClick(mcp, url, n) {
    await mcp.call('browser_navigate', { url });
    const snap = await mcp.call('browser_snapshot');
    const ref = refIn(snap.text, 'button "Target"');
    if (!ref) throw new Error('click: no ref for the target');
    const times = [];
    for (let i = 0; i < 3 + n; i++) {
        const r = await mcp.call('browser_click', { element: 'Target button', target: ref });
        if (i >= 3) times.push(r.ms);
    }
    const counted = await mcp.call('browser_evaluate', {
        function: "() => document.getElementById('count').textContent",
    });
    const m = /"?(\d+)"?/.exec(counted.text.split('### Result')[1] ?? '');
    return {
        ref, clicks: n, counted: m ? Number(m[1]) : null,
        p50_ms: round(quantile(times, 0.5)), p99_ms: round(quantile(times, 0.99)),
        min_ms: round(Math.min(...times)), max_ms: round(Math.max(...times)),
    };
}

async function runSnapshots(mcp, server, names) {
    const pages = {};
    for (const name of names) {
        const url = urlOf(server, name);
        const times = [];
        let text = '';
        try {
            for (let i = 0; i < runs; i++) {
                await mcp.call('browser_navigate', { url });
                const r = await mcp.call('browser_snapshot');
                times.push(r.ms);
                text = r.text;
            }
            const bytes = bytesOf(text);
            pages[name] = {
                snapshot_ms: round(median(times), 2), snapshot_min: round(Math.min(...times), 2),
                snapshot_max: round(Math.max(...times), 2), runs, bytes,
                tokens: Math.floor(bytes / 4), refs: text.split('[ref=').length - 1,
            };
            log(`${name}: browser_snapshot ${pages[name].snapshot_ms} ms, ${bytes} bytes`);
        } catch (err) {
            pages[name] = { error: String(err.message ?? err).split('\n')[0] };
            log(`${name}: ${pages[name].error}`);
        }
    }
    return pages;
}

/** One server: loop, click, and (when names is given) the page snapshots. */
async function session(work, server, settleMs, names) {
    const mcp = await startMcp(work, { settleMs });
    const out = { settle_ms: settleMs ?? 500 };
    try {
        const tag = settleMs === undefined ? 'default' : `settle ${settleMs}`;
        let t0 = Date.now();
        if (wanted('loop')) {
            out.loop = await runLoop(mcp, urlOf(server, 'form'), loops);
            log(`${tag}: loop ${out.loop.total_ms.median} ms (${Date.now() - t0} ms)`);
        }
        t0 = Date.now();
        if (wanted('react')) {
            out.react = await runReact(mcp, urlOf(server, 'react'), reacts);
            log(`${tag}: react loop ${out.react.total_ms.median} ms, ${out.react.ok} of ` +
                `${out.react.loops} ok (${Date.now() - t0} ms)`);
        }
        t0 = Date.now();
        if (wanted('click')) {
            out.click = await runClick(mcp, urlOf(server, 'click'), clicks);
            log(`${tag}: click p50 ${out.click.p50_ms} ms (${Date.now() - t0} ms)`);
        }
        if (names && wanted('snapshot')) {
            t0 = Date.now();
            out.pages = await runSnapshots(mcp, server, names);
            log(`${tag}: snapshots (${Date.now() - t0} ms)`);
        }
    } catch (err) {
        log('MCP stderr:', mcp.stderr());
        throw err;
    } finally {
        await mcp.close();
    }
    return out;
}

async function main(work) {
    const server = await startServer('bench/pages', corpusDir);
    try {
        const result = { version: MCP_VERSION, core_version: MCP_CORE_VERSION };
        const names = snapshots ? pageNames(args, corpusDir, log) : undefined;
        result.default = await session(work, server, undefined, names);
        if (nosettle) result.nosettle = await session(work, server, 0, undefined);
        return result;
    } finally {
        server.close();
    }
}

await runMain('refgate-peer-mcp-', main, log);
