// common.mjs - what the peer benches share: statistics, /proc readings, the
// loopback page server, and a client for Playwright's MCP server over stdio.
//
// The page server serves /own/<file> from bench/pages, /corpus/<file> from
// tests/corpus/pages and /react/<path> from tests/fixtures/react (the todo
// list and the React builds it loads, for the agent loop of bench/loop.c)
// with the same bytes and headers as refgate's test httpd
// (tests/support/httpd.c: Content-Type by extension, Cache-Control:
// no-store, Connection: close), and /warmup and /favicon.ico as the small
// page that httpd gives a path it has no file for.

import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { EXECUTABLE, FLAGS, RESOLVER } from './flags.mjs';

const require = createRequire(import.meta.url);

export const log = (who) => (...a) => console.error(`${who}:`, ...a);

// ---- statistics ----

export function median(xs) {
    const s = [...xs].sort((a, b) => a - b);
    const n = s.length;
    if (!n) return undefined;
    return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/** The q-quantile (0..1), nearest rank, as bench/gateway.c computes it. */
export function quantile(xs, q) {
    const s = [...xs].sort((a, b) => a - b);
    if (!s.length) return undefined;
    return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

export const round = (x, digits = 3) => (x === undefined ? undefined : Number(x.toFixed(digits)));
export const msSince = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
export const now = () => process.hrtime.bigint();

/** { median, min, max } of xs, rounded. */
export function mmm(xs) {
    return { median: round(median(xs)), min: round(Math.min(...xs)), max: round(Math.max(...xs)) };
}

// ---- /proc ----

/** Map pid -> ppid for every process visible in /proc. */
function ppidMap() {
    const map = new Map();
    for (const name of readdirSync('/proc')) {
        if (!/^\d+$/.test(name)) continue;
        let stat;
        try {
            stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        } catch {
            continue; // exited meanwhile
        }
        // comm may hold spaces and parentheses: the fields resume after the last ')'.
        const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        map.set(Number(name), Number(rest[1]));
    }
    return map;
}

/** The children of pid. */
export function childrenOf(pid, map = ppidMap()) {
    const out = [];
    for (const [p, pp] of map) if (pp === pid) out.push(p);
    return out;
}

/** root and all its descendants. */
export function treeOf(root) {
    const map = ppidMap();
    const kids = new Map();
    for (const [p, pp] of map) {
        if (!kids.has(pp)) kids.set(pp, []);
        kids.get(pp).push(p);
    }
    const out = [];
    const stack = [root];
    while (stack.length) {
        const p = stack.pop();
        if (p !== root && !map.has(p)) continue;
        out.push(p);
        for (const k of kids.get(p) || []) stack.push(k);
    }
    return out;
}

/** The children of pid running the Chromium binary. */
export function chromiumChildren(pid) {
    const out = [];
    for (const [p, pp] of ppidMap()) {
        if (pp !== pid) continue;
        let argv0 = '';
        try {
            argv0 = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0')[0];
        } catch {
            continue;
        }
        if (argv0 === EXECUTABLE || argv0.endsWith('/chromium')) out.push(p);
    }
    return out;
}

/** Sum of "Pss:" of /proc/<pid>/smaps_rollup over pids, in KiB; gone processes count 0. */
export function pssKiB(pids) {
    let total = 0;
    for (const pid of pids) {
        let text;
        try {
            text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
        } catch {
            continue;
        }
        const m = /^Pss:\s+(\d+) kB/m.exec(text);
        if (m) total += Number(m[1]);
    }
    return total;
}

/**
 * CPU milliseconds (user + system, fields 14 and 15 of /proc/<pid>/stat) so
 * far, summed over pids; gone processes count 0. The clock tick is 100 Hz on
 * Linux (sysconf(_SC_CLK_TCK), which Node does not expose).
 */
export function cpuMs(pids) {
    let total = 0;
    for (const pid of pids) {
        let text;
        try {
            text = readFileSync(`/proc/${pid}/stat`, 'utf8');
        } catch {
            continue;
        }
        const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
        total += (Number(f[11]) + Number(f[12])) * 10;
    }
    return total;
}

// ---- the page server ----

/** httpd.c's Content-Type for a file name. */
const typeOf = (name) => (name.endsWith('.html') ? 'text/html; charset=utf-8'
    : name.endsWith('.js') ? 'text/javascript' : name.endsWith('.css') ? 'text/css'
        : 'application/octet-stream');

export function startServer(pagesDir = 'bench/pages', corpusDir = 'tests/corpus/pages',
                            reactDir = 'tests/fixtures/react') {
    const roots = { own: resolve(pagesDir), corpus: resolve(corpusDir), react: resolve(reactDir) };
    const server = createServer((req, res) => {
        const m = /^\/(own|corpus)\/([^/?]+\.html)(\?.*)?$/.exec(req.url) ??
                  /^\/(react)\/([\w./-]+)(\?.*)?$/.exec(req.url);
        let body = null;
        if (m && !m[2].includes('..')) {
            try {
                body = readFileSync(join(roots[m[1]], m[2]));
            } catch {
                body = null;
            }
        }
        const headers = { 'Cache-Control': 'no-store', Connection: 'close' };
        // httpd's page for a path it has no file for; the browser's /favicon.ico gets it too,
        // as it does from httpd.
        if (req.url === '/warmup' || req.url === '/favicon.ico')
            body = Buffer.from(`<!doctype html><html><head><title>${req.url}</title></head>` +
                               `<body><h1>${req.url}</h1><p>fixture page</p></body></html>`);
        if (!body) {
            res.writeHead(404, { ...headers, 'Content-Type': 'text/plain' });
            res.end('not found');
            return;
        }
        res.writeHead(200, { ...headers, 'Content-Type': typeOf(m ? m[2] : '.html'),
                             'Content-Length': body.length });
        res.end(body);
    });
    return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok(server)));
}

/**
 * "warmup", "react" (the todo list), a page of bench/pages by its name
 * without .html, or a corpus file name.
 */
export function urlOf(server, name) {
    const base = `http://127.0.0.1:${server.address().port}/`;
    if (name === 'warmup') return base + 'warmup';
    if (name === 'react') return base + 'react/todo.html';
    if (!name.endsWith('.html')) return `${base}own/${name}.html`;
    return `${base}corpus/${name}`;
}

/** The page names of a run: the arguments, or "controls" and every corpus page. */
export function pageNames(args, corpusDir, say) {
    if (args.length) return args;
    const names = ['controls'];
    try {
        names.push(...readdirSync(corpusDir).filter((f) => f.endsWith('.html')).sort());
    } catch {
        say(`no corpus at ${corpusDir} (only the controls page)`);
    }
    return names;
}

// ---- Playwright's MCP server over stdio ----

export const MCP_PACKAGE = dirname(require.resolve('@playwright/mcp/package.json'));
export const MCP_VERSION = require('@playwright/mcp/package.json').version;
/** The playwright-core the MCP server runs on (its own copy, not the library peer's). */
export const MCP_CORE_VERSION = (() => {
    const mcpRequire = createRequire(join(MCP_PACKAGE, 'package.json'));
    return mcpRequire('playwright-core/package.json').version;
})();

/**
 * Starts `@playwright/mcp` (its cli.js, as `npx @playwright/mcp` would) on
 * stdio with Debian's Chromium, refgate's flags and the resolver rule,
 * headless, an in-memory profile, a 1280x720 viewport and its output files
 * under work. settleMs: the server's --timeout-settle (undefined: its default,
 * 500 ms). Resolves to { call(name, args), close(), stderr() } once the MCP
 * handshake is done; the browser starts at the first tool call.
 */
export async function startMcp(work, { settleMs } = {}) {
    const config = join(work, `mcp-${settleMs ?? 'default'}.config.json`);
    writeFileSync(config, JSON.stringify({ browser: { launchOptions: { args: [...FLAGS, RESOLVER] } } }));
    const args = [
        join(MCP_PACKAGE, 'cli.js'), '--config', config, '--executable-path', EXECUTABLE,
        '--headless', '--isolated', '--no-sandbox', '--viewport-size', '1280x720',
        '--output-dir', join(work, 'out'),
    ];
    if (settleMs !== undefined) args.push('--timeout-settle', String(settleMs));
    const child = spawn(process.execPath, args, {
        cwd: work, env: { ...process.env, HOME: work }, stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
    const exited = new Promise((ok) => child.on('exit', ok));

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
            if (!w) continue;
            waiting.delete(msg.id);
            if (msg.error) w.fail(new Error(`MCP: ${JSON.stringify(msg.error)}`));
            else w.ok({ result: msg.result, bytes: Buffer.byteLength(line, 'utf8') });
        }
    });
    child.on('exit', () => {
        for (const w of waiting.values()) w.fail(new Error(`MCP server exited: ${stderr.slice(-500)}`));
        waiting.clear();
    });
    const send = (obj) => child.stdin.write(JSON.stringify(obj) + '\n');
    const request = (method, params) => {
        const id = next++;
        send({ jsonrpc: '2.0', id, method, params });
        return new Promise((ok, fail) => waiting.set(id, { ok, fail }));
    };
    await request('initialize', {
        protocolVersion: '2025-06-18', capabilities: {},
        clientInfo: { name: 'refgate-bench', version: '0' },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized', params: {} });
    return {
        /**
         * One tool call; resolves to { text (the result's text parts), bytes
         * (of the JSON-RPC reply line), ms }, rejects when the tool reports an error.
         */
        async call(name, args = {}) {
            const t0 = now();
            const { result, bytes } = await request('tools/call', { name, arguments: args });
            const ms = msSince(t0);
            const text = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
            if (result.isError) throw new Error(`${name}: ${text.slice(0, 300)}`);
            return { text, bytes, ms };
        },
        async close() {
            await this.call('browser_close').catch(() => {});
            child.stdin.end();
            const t = setTimeout(() => child.kill('SIGKILL'), 5000);
            await exited;
            clearTimeout(t);
        },
        stderr: () => stderr,
    };
}

/** The ref on the first snapshot line that contains `line`, e.g. 'button "Target"'. */
export function refIn(text, line) {
    const at = text.indexOf(line);
    if (at < 0) return undefined;
    const end = text.indexOf('\n', at);
    const m = /\[ref=([^\]]+)\]/.exec(text.slice(at, end < 0 ? undefined : end));
    return m ? m[1] : undefined;
}

/**
 * The ref of the checkbox line nearest (in lines) to the first line that
 * holds item: the item's own checkbox in a list where each item is a
 * checkbox and its text (bench/loop.c reads its sides' snapshots the same way).
 */
export function checkboxNear(text, item) {
    const lines = text.split('\n');
    const at = lines.findIndex((l) => l.includes(item));
    if (at < 0) return undefined;
    let best, dist = Infinity;
    lines.forEach((l, i) => {
        const m = /checkbox.*\[.*ref=([^\],]+)/.exec(l);
        if (m && Math.abs(i - at) < dist) {
            dist = Math.abs(i - at);
            best = { ref: m[1], line: l };
        }
    });
    return best;
}

/**
 * Runs main(dir) in a fresh scratch directory under the system's temp
 * directory, prints its result as one JSON line, removes the directory,
 * and sets the exit status (1 after an error, which goes to say).
 */
export async function runMain(prefix, main, say) {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    let status = 0;
    try {
        process.stdout.write(JSON.stringify(await main(dir)) + '\n');
    } catch (err) {
        say(err && err.stack ? err.stack : String(err));
        status = 1;
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
    process.exitCode = status;
}
