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
// ../shared/corpus/pages/, served over loopback by a small static server in
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
// Before the pages, one run on a small page (/warmup, the fixture page
// refgate's httpd serves) warms the browser up and is not counted (observe.c
// does the same).
//
// With --mcp, also Playwright's MCP server (the one built into
// playwright-core 1.65.1, lib/entry/mcp.js, which is what @playwright/mcp
// starts) over stdio JSON-RPC on the controls page, `runs` times:
// browser_navigate, then browser_snapshot timed. browser_navigate already
// takes a snapshot (written to a file in --output-dir, only its link in the
// reply), so browser_snapshot is the second snapshot of the loaded page:
// report.mjs sets it against refgate's second observe. The size is the tool
// result's text (the snapshot in a YAML block under a short page header).
//
// Prints one JSON object on stdout (diagnostics go to stderr), with the keys
// of observe.c: controls and pages.<name> with first_ms, first_min,
// first_max, second_ms, second_min, second_max, bytes, tokens (bytes / 4),
// lines and refs.
//
// Usage: node bench/peer/observe.mjs [--quick] [--runs N] [--mcp]
//            [--pages DIR] [--corpus DIR] [PAGE...]
//   PAGE is "controls" or a file name in the corpus; default: all of them.
//   Runs: 5, or 2 with --quick. Run from the repository root.

import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { EXECUTABLE, FLAGS as BASE_FLAGS, RESOLVER } from './flags.mjs';

const require = createRequire(import.meta.url);
const PW_VERSION = require('playwright-core/package.json').version;
const MCP_ENTRY = join(dirname(require.resolve('playwright-core/package.json')), 'lib/entry/mcp.js');

// refgate's flags (flags.mjs) and the resolver rule for the corpus pages.
const FLAGS = [...BASE_FLAGS, RESOLVER];

const log = (...a) => console.error('observe.mjs:', ...a);

// ---- arguments ----

let runs = 5;
let mcp = false;
let pagesDir = 'bench/pages';
let corpusDir = '../shared/corpus/pages';
const names = [];
{
    const argv = process.argv.slice(2);
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === '--quick') runs = 2;
        else if (a === '--runs') runs = Number(argv[++i]);
        else if (a === '--mcp') mcp = true;
        else if (a === '--pages') pagesDir = argv[++i];
        else if (a === '--corpus') corpusDir = argv[++i];
        else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
        else names.push(a);
    }
    if (!(runs >= 1 && runs <= 50)) throw new Error('--runs wants 1..50');
    if (!names.length) {
        names.push('controls');
        try {
            names.push(...readdirSync(corpusDir).filter((f) => f.endsWith('.html')).sort());
        } catch {
            log(`no corpus at ${corpusDir} (only the controls page)`);
        }
    }
}

// ---- statistics ----

function median(xs) {
    const s = [...xs].sort((a, b) => a - b);
    const n = s.length;
    return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}
const round = (x, digits = 2) => Number(x.toFixed(digits));
const msSince = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const countOf = (s, needle) => s.split(needle).length - 1;

function summary(first, second, text) {
    const bytes = Buffer.byteLength(text, 'utf8');
    return {
        first_ms: round(median(first)), first_min: round(Math.min(...first)),
        first_max: round(Math.max(...first)),
        second_ms: round(median(second)), second_min: round(Math.min(...second)),
        second_max: round(Math.max(...second)),
        min: round(Math.min(...first)), max: round(Math.max(...first)),
        runs: first.length, bytes, tokens: Math.floor(bytes / 4),
        lines: countOf(text, '\n') + (text.endsWith('\n') ? 0 : 1),
        refs: countOf(text, '[ref='),
    };
}

// ---- the loopback server: /own/<file> from pagesDir, /corpus/<file> from corpusDir ----

function startServer() {
    const roots = { own: resolve(pagesDir), corpus: resolve(corpusDir) };
    const server = createServer((req, res) => {
        const m = /^\/(own|corpus)\/([^/?]+\.html)(\?.*)?$/.exec(req.url);
        let body = null;
        if (m && !m[2].includes('..')) {
            try {
                body = readFileSync(join(roots[m[1]], m[2]));
            } catch {
                body = null;
            }
        }
        const headers = { 'Cache-Control': 'no-store', Connection: 'close' };
        if (req.url === '/warmup') // the page refgate's httpd gives a path it has no file for
            body = Buffer.from('<!doctype html><html><head><title>/warmup</title></head>' +
                               '<body><h1>/warmup</h1><p>fixture page</p></body></html>');
        if (!body) {
            res.writeHead(404, { ...headers, 'Content-Type': 'text/plain' });
            res.end('not found');
            return;
        }
        res.writeHead(200, { ...headers, 'Content-Type': 'text/html; charset=utf-8',
                             'Content-Length': body.length });
        res.end(body);
    });
    return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok(server)));
}

const urlOf = (server, name) =>
    `http://127.0.0.1:${server.address().port}/` +
    (name === 'controls' ? 'own/controls.html' : name === 'warmup' ? 'warmup' : `corpus/${name}`);

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
        if (a.length !== b.length) log(`${url}: the second snapshot differs in size`);
        if (process.env.RG_BENCH_DUMP) console.error(a);
        return { first, second, text: a };
    } finally {
        await context.close();
    }
}

async function measure(browser, url) {
    const first = [], second = [];
    let text = '';
    for (let i = 0; i < runs; i++) {
        const r = await runOnce(browser, url);
        first.push(r.first);
        second.push(r.second);
        text = r.text;
    }
    return summary(first, second, text);
}

// ---- Playwright's MCP server over stdio ----

function mcpClient(child) {
    let buf = '';
    let next = 1;
    const waiting = new Map();
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
        buf += d;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (!line) continue;
            let msg;
            try {
                msg = JSON.parse(line);
            } catch {
                continue;
            }
            const w = waiting.get(msg.id);
            if (w) {
                waiting.delete(msg.id);
                if (msg.error) w.fail(new Error(`MCP: ${JSON.stringify(msg.error)}`));
                else w.ok(msg.result);
            }
        }
    });
    const send = (obj) => child.stdin.write(JSON.stringify(obj) + '\n');
    return {
        call(method, params) {
            const id = next++;
            send({ jsonrpc: '2.0', id, method, params });
            return new Promise((ok, fail) => waiting.set(id, { ok, fail }));
        },
        notify(method, params) {
            send({ jsonrpc: '2.0', method, params });
        },
    };
}

const toolText = (result) =>
    (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

async function measureMcp(url, work) {
    const config = join(work, 'mcp.config.json');
    writeFileSync(config, JSON.stringify({ browser: { launchOptions: { args: FLAGS } } }));
    const child = spawn(process.execPath, [
        MCP_ENTRY, '--config', config, '--executable-path', EXECUTABLE, '--headless',
        '--isolated', '--no-sandbox', '--viewport-size', '1280x720', '--output-dir', join(work, 'out'),
    ], { cwd: work, env: { ...process.env, HOME: work }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    const exited = new Promise((ok) => child.on('exit', ok));
    const c = mcpClient(child);
    try {
        await c.call('initialize', {
            protocolVersion: '2025-06-18', capabilities: {},
            clientInfo: { name: 'refgate-bench', version: '0' },
        });
        c.notify('notifications/initialized', {});
        const navigate = [], snap = [];
        let text = '', navText = '';
        for (let i = 0; i < runs; i++) {
            let t0 = process.hrtime.bigint();
            const nav = await c.call('tools/call', { name: 'browser_navigate', arguments: { url } });
            navigate.push(msSince(t0));
            navText = toolText(nav);
            t0 = process.hrtime.bigint();
            const r = await c.call('tools/call', { name: 'browser_snapshot', arguments: {} });
            snap.push(msSince(t0));
            text = toolText(r);
            if (r.isError) throw new Error(`browser_snapshot: ${text.slice(0, 300)}`);
        }
        await c.call('tools/call', { name: 'browser_close', arguments: {} }).catch(() => {});
        const bytes = Buffer.byteLength(text, 'utf8');
        return {
            snapshot_ms: round(median(snap)), snapshot_min: round(Math.min(...snap)),
            snapshot_max: round(Math.max(...snap)),
            navigate_ms: round(median(navigate)), navigate_bytes: Buffer.byteLength(navText, 'utf8'),
            runs, bytes, tokens: Math.floor(bytes / 4), refs: countOf(text, '[ref='),
        };
    } catch (err) {
        log('MCP stderr:', stderr.slice(-2000));
        throw err;
    } finally {
        child.stdin.end();
        const t = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
    }
}

// ---- main ----

async function main(work) {
    const server = await startServer();
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
                r = await measure(browser, urlOf(server, name));
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
    if (mcp) {
        try {
            result.mcp = { page: 'controls', ...(await measureMcp(urlOf(server, 'controls'), work)) };
            log(`MCP browser_snapshot: ${result.mcp.snapshot_ms} ms, ${result.mcp.bytes} bytes`);
        } catch (err) {
            result.mcp = { error: String(err.message ?? err).split('\n')[0] };
            log(`MCP: ${result.mcp.error}`);
        }
    }
    server.close();
    return result;
}

const work = mkdtempSync(join(tmpdir(), 'refgate-peer-obs-'));
let status = 0;
try {
    process.stdout.write(JSON.stringify(await main(work)) + '\n');
} catch (err) {
    log(err && err.stack ? err.stack : String(err));
    status = 1;
} finally {
    rmSync(work, { recursive: true, force: true });
}
process.exitCode = status;
