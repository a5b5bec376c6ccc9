// agent.mjs CLI APP_URL [--http MCP_URL] - an agent-style task through
// refgate's MCP server, driven by the official MCP TypeScript SDK client
// (tests/mcp/package.json pins it). Over stdio the client starts `CLI mcp`
// itself, as an agent host does (REFGATE_URL and REFGATE_KEY pass through to
// it); with --http it speaks Streamable HTTP to MCP_URL (POST /v1/mcp through
// nginx) with REFGATE_KEY as its Bearer key, as a hosted agent does.
//
// The task, on tests/mcp/app: list the tools; navigate to the shop; find the
// search box in the snapshot; type into it (the page reacts to keydown
// only); click the result that appeared, which opens in a new tab; list the
// tabs and switch to it; add the item to the cart; empty it behind a
// confirm(); check out, which throws, and read the console; drag the card
// to the wishlist; attach a receipt (a file
// the page reads back: over stdio by its path, over HTTP by its bytes); take
// a screenshot; call a tool that does not exist; save the cookies and
// storage the page set and start a new session from them; close. Every step checks what
// an agent would read in the answer, and prints one line; the first failed
// check exits with status 1 and says what was wrong.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [cli, appUrl, flag, mcpUrl] = process.argv.slice(2);
const overHttp = flag === '--http';

function fail(msg) {
  console.log('FAIL ' + msg);
  process.exit(1);
}
function check(cond, msg, detail) {
  if (!cond) fail(msg + (detail ? '\n' + detail : ''));
  console.log('ok ' + msg);
}
const textOf = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
// The ref of the first line with this role and name in an outline.
function refOf(text, role, name) {
  const re = new RegExp('- ' + role + ' "' + name + '"[^\\n]*\\[ref=(@[\\w-]+)\\]');
  const m = re.exec(text);
  if (!m) fail(`no ${role} "${name}" with a ref in:\n${text}`);
  return m[1];
}

const transport = overHttp
  ? new StreamableHTTPClientTransport(new URL(mcpUrl), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.REFGATE_KEY}` } },
  })
  : new StdioClientTransport({
    command: cli,
    args: ['mcp'],
    env: { REFGATE_URL: process.env.REFGATE_URL, REFGATE_KEY: process.env.REFGATE_KEY, PATH: process.env.PATH },
    stderr: 'inherit',
  });
const client = new Client({ name: 'refgate-test-agent', version: '1.0.0' });
await client.connect(transport);
check(client.getServerVersion()?.name === 'refgate', 'initialize: the server is refgate');
if (overHttp) check(typeof transport.sessionId === 'string' && transport.sessionId.length > 8,
  'over HTTP, initialize gave an Mcp-Session-Id');

const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
for (const t of ['browser_navigate', 'browser_snapshot', 'browser_click', 'browser_type', 'browser_tabs',
  'browser_file_upload', 'browser_take_screenshot', 'browser_drag', 'browser_park', 'browser_console_messages',
  'browser_resize', 'browser_network_requests', 'browser_find', 'browser_check', 'browser_uncheck',
  'browser_navigate_forward', 'browser_reload', 'browser_mouse_click_xy', 'browser_mouse_move_xy',
  'browser_pdf_save', 'browser_emulate_media', 'browser_network_state_set', 'browser_mouse_down', 'browser_mouse_up', 'browser_mouse_wheel', 'browser_mouse_drag_xy'])
  check(names.includes(t), `tools/list has ${t}`);
check(tools.every((t) => t.inputSchema && t.inputSchema.type === 'object'), 'every tool has an object inputSchema');

let r = await client.callTool({ name: 'browser_navigate', arguments: { url: appUrl + '/index.html' } });
check(!r.isError && textOf(r).includes('Fruit shop'), 'navigate answers with the page outline');
const box = refOf(textOf(r), 'textbox', 'Search');

// browser_check and browser_uncheck answer with the change
const stock = refOf(textOf(r), 'checkbox', 'In stock only');
r = await client.callTool({ name: 'browser_check', arguments: { target: stock } });
check(!r.isError && /^\+ .*checkbox "In stock only" \(checked[,)]/m.test(textOf(r)), 'browser_check checks the box', textOf(r));
r = await client.callTool({ name: 'browser_uncheck', arguments: { target: stock } });
check(!r.isError && /^- .*checkbox "In stock only" \(checked[,)]/m.test(textOf(r)), 'browser_uncheck unchecks it', textOf(r));
// A computer-use agent clicks where it sees the box: the mouse at page coordinates focuses it.
r = await client.callTool({ name: 'browser_evaluate', arguments: {
  function: "() => { const b = document.getElementById('q').getBoundingClientRect(); return [b.x + b.width / 2, b.y + b.height / 2].join(' '); }",
} });
const at = /(\d+(?:\.\d+)?) (\d+(?:\.\d+)?)/.exec(textOf(r));
check(!r.isError && at, 'the search box has a place on the page', textOf(r));
r = await client.callTool({ name: 'browser_mouse_move_xy', arguments: { x: Number(at[1]), y: Number(at[2]) } });
check(!r.isError, 'browser_mouse_move_xy moves the mouse there', textOf(r));
r = await client.callTool({ name: 'browser_mouse_click_xy', arguments: { x: Number(at[1]), y: Number(at[2]) } });
check(!r.isError && /^\+ .*textbox "Search" \(focused\)/m.test(textOf(r)),
  'browser_mouse_click_xy at its centre focuses it', textOf(r));
// down, up and the wheel act where the mouse is; a drag goes from one point to another
// (the gateway's test_view checks what the page sees of them)
for (const [name, args] of [['browser_mouse_down', {}], ['browser_mouse_up', {}],
  ['browser_mouse_wheel', { deltaX: 0, deltaY: 120 }],
  ['browser_mouse_drag_xy', { startX: Number(at[1]), startY: Number(at[2]), endX: Number(at[1]) + 30, endY: Number(at[2]) }]]) {
  r = await client.callTool({ name, arguments: args });
  check(!r.isError, `${name} is taken`, textOf(r));
}
r = await client.callTool({ name: 'browser_mouse_wheel', arguments: { deltaX: 0, deltaY: 1e6 } });
check(r.isError && /bad_request/.test(textOf(r)), 'a wheel past the bounds is refused', textOf(r));
// browser_snapshot with Playwright's arguments: boxes where the page has its elements, a part
// of the page, a depth, a file
r = await client.callTool({ name: 'browser_snapshot', arguments: { boxes: true } });
const boxed = /textbox "Search"[^\n]*\[ref=@[\w-]+\] \[box=(\d+),(\d+),(\d+),(\d+)\]/.exec(textOf(r));
check(!r.isError && boxed &&
  Math.abs(Number(boxed[1]) + Number(boxed[3]) / 2 - Number(at[1])) <= 1 &&
  Math.abs(Number(boxed[2]) + Number(boxed[4]) / 2 - Number(at[2])) <= 1,
  'boxes: the search box\'s box is where the page has it', textOf(r));
const refLines = textOf(r).split('\n').filter((l) => /\[ref=/.test(l));
check(refLines.length > 1 && refLines.every((l) => /\[ref=@[\w~-]+\] \[box=\d+,\d+,\d+,\d+\]$/.test(l)),
  'boxes: every line with a ref has its box, once', textOf(r));
r = await client.callTool({ name: 'browser_snapshot', arguments: { target: 'css:main', depth: 1 } });
check(!r.isError && /- \.\.\. \(\d+ more\)/.test(textOf(r)) && !/checkbox "In stock only"/.test(textOf(r)),
  'target and depth: the main part, folded below its first level', textOf(r));
if (overHttp) {
  r = await client.callTool({ name: 'browser_snapshot', arguments: { filename: '/tmp/x.md' } });
  check(r.isError && /bad_request/.test(textOf(r)), 'over HTTP a snapshot filename is refused', textOf(r));
} else {
  const sdir2 = mkdtempSync(join(tmpdir(), 'refgate-snap-'));
  const sfile = join(sdir2, 'snap.md');
  r = await client.callTool({ name: 'browser_snapshot', arguments: { filename: sfile } });
  const saved = r.isError ? '' : readFileSync(sfile, 'utf8');
  rmSync(sdir2, { recursive: true, force: true });
  check(!r.isError && /Saved the snapshot to /.test(textOf(r)) && saved.includes('textbox "Search"'),
    'over stdio the snapshot goes to the file', textOf(r));
}
// browser_click's modifiers, ControlOrMeta included
r = await client.callTool({ name: 'browser_click', arguments: { target: stock, modifiers: ['ControlOrMeta'] } });
check(!r.isError && /^\+ .*checkbox "In stock only" \(checked[,)]/m.test(textOf(r)),
  'a click with ControlOrMeta held checks the box', textOf(r));
r = await client.callTool({ name: 'browser_uncheck', arguments: { target: stock } });
r = await client.callTool({ name: 'browser_mouse_click_xy', arguments: { x: -40, y: 5 } });
check(r.isError && /bad_request/.test(textOf(r)), 'a place off the page is refused', textOf(r));

r = await client.callTool({ name: 'browser_type', arguments: { element: 'Search box', target: box, text: 'ba' } });
check(!r.isError && /link "Banana"/.test(textOf(r)), 'typing into the keydown-driven search shows Banana in the changes');
r = await client.callTool({ name: 'browser_snapshot', arguments: {} });
check(!/link "Apple"/.test(textOf(r)) && /textbox "Search"[^\n]*\[value="ba"\]/.test(textOf(r)),
  'the snapshot has the typed value and only the matching results', textOf(r));
const banana = refOf(textOf(r), 'link', 'Banana');

r = await client.callTool({ name: 'browser_click', arguments: { element: 'Banana', target: banana } });
check(!r.isError, 'click the result');
r = await client.callTool({ name: 'browser_tabs', arguments: { action: 'list' } });
check(!r.isError && /^- 0: \(current\)/m.test(textOf(r)) && /^- 1: .*item\.html\?name=Banana/m.test(textOf(r)),
  'the result opened in a second tab, and the shop is still the current one', textOf(r));
r = await client.callTool({ name: 'browser_tabs', arguments: { action: 'select', index: 1 } });
check(!r.isError && /^- 1: \(current\)/m.test(textOf(r)), 'switch to the new tab', textOf(r));
r = await client.callTool({ name: 'browser_snapshot', arguments: {} });
check(/Page Title: Banana/.test(textOf(r)) && textOf(r).includes('Price: 1.50 EUR'), 'the item page shows its name and price');
// browser_find: the button's line and ref without the whole snapshot
r = await client.callTool({ name: 'browser_find', arguments: { text: 'add to CART' } });
check(!r.isError && /^Found 1 match for "add to CART":\n\n- document/.test(textOf(r)),
  'browser_find finds the button, without regard to case, under its path', textOf(r));
const add = refOf(textOf(r), 'button', 'Add to cart');
r = await client.callTool({ name: 'browser_find', arguments: { regex: '/price: \\d+\\.\\d\\d eur/i' } });
check(!r.isError && textOf(r).includes('Price: 1.50 EUR'), 'browser_find takes a regular expression', textOf(r));
r = await client.callTool({ name: 'browser_find', arguments: { text: 'no such words' } });
check(!r.isError && textOf(r) === 'No matches found for "no such words".', 'browser_find says when nothing matches',
  textOf(r));
r = await client.callTool({ name: 'browser_find', arguments: { regex: '(unclosed' } });
check(r.isError && /bad_request: .*not a valid regular expression/.test(textOf(r)),
  'a bad regular expression is a tool error that says why', textOf(r));
r = await client.callTool({ name: 'browser_click', arguments: { target: add } });
check(!r.isError && textOf(r).includes('In the cart: 1'), 'the click answers with the change it made');
r = await client.callTool({ name: 'browser_reload', arguments: {} });
check(!r.isError && /Page Title: Banana/.test(textOf(r)) && textOf(r).includes('In the cart: 0'),
  'browser_reload loads the page again, as it was first served', textOf(r));
r = await client.callTool({ name: 'browser_click', arguments: { target: refOf(textOf(r), 'button', 'Add to cart') } });
check(!r.isError && textOf(r).includes('In the cart: 1'), 'add it again');
// A confirm() is dismissed unless the call accepts it, and the answer says which.
r = await client.callTool({ name: 'browser_snapshot', arguments: {} });
const empty = refOf(textOf(r), 'button', 'Empty the cart');
r = await client.callTool({ name: 'browser_click', arguments: { target: empty } });
check(!r.isError && textOf(r).includes('- Dialog: confirm "Empty the cart?" was dismissed') &&
  textOf(r).includes('acceptDialogs'), 'a dismissed confirm is said, with how to accept it', textOf(r));
r = await client.callTool({ name: 'browser_click', arguments: { target: empty, acceptDialogs: true } });
check(!r.isError && textOf(r).includes('- Dialog: confirm "Empty the cart?" was accepted') &&
  textOf(r).includes('In the cart: 0'), 'accepted, the cart is emptied', textOf(r));

// A button whose handler throws changes nothing on the page: the error is
// said in that call's answer (or, when the page's report came after the
// click's, in the next call's), and the console lists it with its warning.
r = await client.callTool({ name: 'browser_snapshot', arguments: {} });
const checkout = refOf(textOf(r), 'button', 'Check out');
r = await client.callTool({ name: 'browser_click', arguments: { target: checkout } });
let said = textOf(r);
if (!said.includes('payment service unavailable'))
  said += textOf(await client.callTool({ name: 'browser_snapshot', arguments: {} }));
check(!r.isError && said.includes('- Page error (exception): Uncaught Error: payment service unavailable'),
  'the checkout threw: the answer says so', said);
r = await client.callTool({ name: 'browser_console_messages', arguments: {} });
check(!r.isError && /\[warning\] checking out Banana @ \S+item\.html\S*:\d+/.test(textOf(r)) &&
  /\[exception\] Uncaught Error: payment service unavailable/.test(textOf(r)),
  'the console has the warning and the error, with where they came from', textOf(r));
r = await client.callTool({ name: 'browser_console_messages', arguments: { level: 'error' } });
check(!r.isError && !textOf(r).includes('checking out') && textOf(r).includes('payment service unavailable'),
  'level error leaves the warning out', textOf(r));
// What the checkout sent, and what came back: the requests, the page's
// own first (the style of Playwright's tool: "[METHOD] url => [status]").
r = await client.callTool({ name: 'browser_network_requests', arguments: {} });
for (let i = 0; i < 50 && !/\[POST\] \S+\/missing\/checkout\?item=Banana => \[404\]/.test(textOf(r)); i++) {
  await new Promise((ok) => setTimeout(ok, 100));
  r = await client.callTool({ name: 'browser_network_requests', arguments: {} });
}
check(!r.isError && /\[POST\] \S+\/missing\/checkout\?item=Banana => \[404\] Not Found/.test(textOf(r)) &&
  /\[GET\] \S+item\.html\?name=Banana => \[200\] OK/.test(textOf(r)),
  'the requests list the refused checkout and the page itself', textOf(r));

// A phone's viewport: the page's media queries answer at once.
r = await client.callTool({ name: 'browser_resize', arguments: { width: 390, height: 844 } });
check(!r.isError && textOf(r).includes('The viewport is 390x844') && textOf(r).includes('Compact layout') &&
  !/^\+ .*Wide layout/m.test(textOf(r)), 'resize to a phone: the compact layout shows', textOf(r));
r = await client.callTool({ name: 'browser_resize', arguments: { width: 1280, height: 800 } });
check(!r.isError && textOf(r).includes('Wide layout'), 'and back', textOf(r));
let badSize = '';
try {
  await client.callTool({ name: 'browser_resize', arguments: { width: 'wide', height: 800 } });
} catch (e) {
  badSize = String(e.message);
}
check(/width/.test(badSize), 'a size that is not a number is refused, naming it', badSize);

// a draggable card is a plain <div>: generic, with no name, and a ref
r = await client.callTool({ name: 'browser_snapshot', arguments: {} });
const card = /- generic \[ref=(@[\w-]+)\]: Drag me to the wishlist/.exec(textOf(r));
check(card, 'the draggable card has a ref', textOf(r));
r = await client.callTool({ name: 'browser_drag', arguments: {
  startElement: 'the item card', startTarget: card[1], endElement: 'Wishlist', endTarget: 'role:list[name="Wishlist"]' } });
check(!r.isError && textOf(r).includes('Wished: Banana'), 'drag the card to the wishlist: the change says it is there', textOf(r));

// A receipt the page reads back: over stdio the CLI reads it from its path,
// over HTTP the agent sends its bytes.
const receipt = Buffer.from('RECEIPT for one banana, 1.50 EUR\n');
const dir = mkdtempSync(join(tmpdir(), 'refgate-agent-'));
const path = join(dir, 'receipt.txt');
writeFileSync(path, receipt);
const upload = overHttp
  ? { files: [{ name: 'receipt.txt', data: receipt.toString('base64'), mime: 'text/plain' }] }
  : { paths: [path] };
r = await client.callTool({ name: 'browser_file_upload', arguments: upload });
rmSync(dir, { recursive: true, force: true });
check(!r.isError, 'attach the receipt', textOf(r));
// The page reads the file in its change handler, asynchronously (a Blob's
// arrayBuffer): an agent waits for what the page says, as here, before it
// reads the page again. The upload cannot know when the page's own work ends.
// Here it waits for "Nothing attached" to go (textGone), which the page
// replaces with what it read in one step.
r = await client.callTool({ name: 'browser_wait_for', arguments: { textGone: 'Nothing attached' } });
check(!r.isError, 'wait for the page to stop saying nothing is attached', textOf(r));
r = await client.callTool({ name: 'browser_snapshot', arguments: {} });
check(textOf(r).includes(`Attached receipt.txt, ${receipt.length} bytes, starting "RECEIPT"`),
  'the page read the file back: its name, size and first bytes', textOf(r));

r = await client.callTool({ name: 'browser_take_screenshot', arguments: {} });
const img = r.content.find((c) => c.type === 'image');
check(!r.isError && img && img.mimeType === 'image/png' &&
  Buffer.from(img.data, 'base64').subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'the screenshot is a PNG image');

// The page as a PDF: in the answer as a resource, or over stdio to a file.
r = await client.callTool({ name: 'browser_pdf_save', arguments: {} });
const doc = r.content.find((c) => c.type === 'resource');
check(!r.isError && doc && doc.resource.mimeType === 'application/pdf' &&
  Buffer.from(doc.resource.blob, 'base64').subarray(0, 5).toString() === '%PDF-',
  'browser_pdf_save answers with the PDF', textOf(r));
if (overHttp) {
  r = await client.callTool({ name: 'browser_pdf_save', arguments: { filename: '/tmp/x.pdf' } });
  check(r.isError && /bad_request/.test(textOf(r)), 'over HTTP a filename is refused, saying why', textOf(r));
} else {
  const pdir = mkdtempSync(join(tmpdir(), 'refgate-pdf-'));
  const pfile = join(pdir, 'page.pdf');
  r = await client.callTool({ name: 'browser_pdf_save', arguments: { filename: pfile } });
  const head = r.isError ? '' : readFileSync(pfile).subarray(0, 5).toString();
  rmSync(pdir, { recursive: true, force: true });
  check(!r.isError && head === '%PDF-' && /Saved the page as PDF to /.test(textOf(r)),
    'over stdio browser_pdf_save writes the file', textOf(r));
}

// Dark mode, as the page's media queries see it, and back
const dark = "() => String(matchMedia('(prefers-color-scheme: dark)').matches)";
r = await client.callTool({ name: 'browser_emulate_media', arguments: { colorScheme: 'dark', media: 'screen' } });
check(!r.isError && /Emulating .*color_scheme: dark/.test(textOf(r)), 'browser_emulate_media says what it emulates', textOf(r));
r = await client.callTool({ name: 'browser_evaluate', arguments: { function: dark } });
check(textOf(r).includes('true'), 'the page sees the dark scheme', textOf(r));
r = await client.callTool({ name: 'browser_emulate_media', arguments: { colorScheme: null, media: null } });
check(!r.isError && /Emulating nothing/.test(textOf(r)), 'null stops it', textOf(r));
r = await client.callTool({ name: 'browser_evaluate', arguments: { function: dark } });
check(textOf(r).includes('false'), 'the page sees the browser\'s own scheme again', textOf(r));
r = await client.callTool({ name: 'browser_emulate_media', arguments: { colorScheme: 'sepia' } });
check(r.isError && /bad_request/.test(textOf(r)), 'a scheme that does not exist is refused', textOf(r));

// Offline and back, as the page sees it
const online = '() => String(navigator.onLine)';
r = await client.callTool({ name: 'browser_network_state_set', arguments: { state: 'offline' } });
check(!r.isError && /Network is now offline/.test(textOf(r)), 'browser_network_state_set says offline', textOf(r));
r = await client.callTool({ name: 'browser_evaluate', arguments: { function: online } });
check(textOf(r).includes('false'), 'the page is offline', textOf(r));
r = await client.callTool({ name: 'browser_emulate_media', arguments: { colorScheme: 'dark' } });
check(!r.isError && /Emulating color_scheme: dark, offline/.test(textOf(r)), 'the emulation lists offline beside the media', textOf(r));
r = await client.callTool({ name: 'browser_emulate_media', arguments: { colorScheme: null } });
r = await client.callTool({ name: 'browser_network_state_set', arguments: { state: 'online' } });
check(!r.isError && /Network is now online/.test(textOf(r)), 'and online again', textOf(r));
r = await client.callTool({ name: 'browser_evaluate', arguments: { function: online } });
check(textOf(r).includes('true'), 'the page is online again', textOf(r));
r = await client.callTool({ name: 'browser_network_state_set', arguments: { state: 'sleepy' } });
check(r.isError && /bad_request/.test(textOf(r)), 'a network state that does not exist is refused', textOf(r));

r = await client.callTool({ name: 'browser_click', arguments: { target: '@nosuchref' } });
check(r.isError && /stale_ref|no_match/.test(textOf(r)), 'a ref that is not there is a tool error with its code');

let refused = false;
try {
  await client.callTool({ name: 'browser_teleport', arguments: {} });
} catch (e) {
  refused = /unknown tool/.test(String(e.message));
}
check(refused, 'an unknown tool is refused with an error');

r = await client.callTool({ name: 'browser_snapshot', arguments: {} });
check(!r.isError && /Page Title: Banana/.test(textOf(r)), 'the server still serves after the errors');

// A login carried to a later session: what the page stored, saved, and a
// new session started from it (over HTTP the MCP session keeps its browser
// session, and the tool says how to start from a state instead).
r = await client.callTool({ name: 'browser_evaluate', arguments: {
  function: "() => { document.cookie = 'who=ada; max-age=600; path=/'; localStorage.setItem('basket', 'banana'); return 'stored'; }",
} });
check(!r.isError && textOf(r).includes('stored'), 'the page stores a cookie and localStorage', textOf(r));
const holds = (st) => st.cookies.some((c) => c.name === 'who' && c.value === 'ada') &&
  st.origins.some((o) => o.localStorage.some((i) => i.name === 'basket' && i.value === 'banana'));
if (overHttp) {
  r = await client.callTool({ name: 'browser_storage_state', arguments: {} });
  const t = textOf(r);
  check(!r.isError && holds(JSON.parse(t.slice(t.indexOf('\n') + 1))),
    'browser_storage_state gives the cookie and the storage in its answer', t);
  r = await client.callTool({ name: 'browser_storage_state', arguments: { filename: '/tmp/x.json' } });
  check(r.isError && /cannot write over HTTP/.test(textOf(r)), 'over HTTP it writes no file', textOf(r));
  r = await client.callTool({ name: 'browser_set_storage_state', arguments: { state: { cookies: [] } } });
  check(r.isError && /POST \/v1\/sessions/.test(textOf(r)),
    'over HTTP, browser_set_storage_state says how to start from a state instead', textOf(r));
} else {
  const sdir = mkdtempSync(join(tmpdir(), 'refgate-state-'));
  const file = join(sdir, 'state.json');
  r = await client.callTool({ name: 'browser_storage_state', arguments: { filename: file } });
  check(!r.isError && /Saved the storage state/.test(textOf(r)), 'browser_storage_state saves to a file', textOf(r));
  check(holds(JSON.parse(readFileSync(file, 'utf8'))), 'the file holds the cookie and the storage');
  check((statSync(file).mode & 0o777) === 0o600, 'only its owner may read the file');
  r = await client.callTool({ name: 'browser_set_storage_state', arguments: { filename: file } });
  rmSync(sdir, { recursive: true, force: true });
  check(!r.isError && /Started session .* from the state and closed /.test(textOf(r)),
    'browser_set_storage_state starts a new session from it and closes the old one', textOf(r));
  r = await client.callTool({ name: 'browser_navigate', arguments: { url: appUrl + '/index.html' } });
  check(!r.isError, 'navigate in the new session', textOf(r));
  r = await client.callTool({ name: 'browser_evaluate', arguments: {
    function: "() => document.cookie + '|' + localStorage.getItem('basket')",
  } });
  check(textOf(r).includes('who=ada|banana'), 'the new session has the cookie and the storage', textOf(r));
}

// Cookies with Playwright's MCP tools: one set for the page's own site and
// sent by the browser, found by list and get, deleted by name, then all gone.
r = await client.callTool({ name: 'browser_cookie_set', arguments: { name: 'token', value: 't-7', httpOnly: true } });
check(!r.isError, 'browser_cookie_set sets a cookie for the page\'s site', textOf(r));
r = await client.callTool({ name: 'browser_evaluate', arguments: {
  function: "async () => { document.cookie = 'lang=en; path=/'; return (await fetch('/echo-cookie')).text(); }",
} });
check(!r.isError && textOf(r).includes('token=t-7'), 'the page\'s request carries it', textOf(r));
r = await client.callTool({ name: 'browser_cookie_list', arguments: { domain: '127.0.0.1' } });
check(!r.isError && /^token=t-7 \(domain: 127\.0\.0\.1, path: \/\)$/m.test(textOf(r)),
  'browser_cookie_list lists it', textOf(r));
r = await client.callTool({ name: 'browser_cookie_get', arguments: { name: 'token' } });
check(!r.isError && /token=t-7 .*httpOnly: true/.test(textOf(r)), 'browser_cookie_get shows its flags', textOf(r));
r = await client.callTool({ name: 'browser_cookie_delete', arguments: { name: 'token' } });
check(!r.isError && /Deleted 1 cookie/.test(textOf(r)), 'browser_cookie_delete deletes it', textOf(r));
r = await client.callTool({ name: 'browser_cookie_get', arguments: { name: 'token' } });
check(/Cookie 'token' not found/.test(textOf(r)), 'and it is gone', textOf(r));
r = await client.callTool({ name: 'browser_cookie_set', arguments: { name: 'x', value: 'y', sameSite: 'Sometimes' } });
check(r.isError, 'a cookie with a SameSite the tool does not know is refused', textOf(r));
r = await client.callTool({ name: 'browser_cookie_clear', arguments: {} });
check(!r.isError && /Cleared [1-9]\d* cookie/.test(textOf(r)), 'browser_cookie_clear clears the rest', textOf(r));
r = await client.callTool({ name: 'browser_cookie_list', arguments: {} });
check(/No cookies found/.test(textOf(r)), 'no cookies are left', textOf(r));

// The page's web storage with Playwright's MCP tools.
r = await client.callTool({ name: 'browser_localstorage_set', arguments: { key: 'theme', value: 'dark' } });
check(!r.isError, 'browser_localstorage_set sets an item', textOf(r));
r = await client.callTool({ name: 'browser_evaluate', arguments: { function: "() => localStorage.getItem('theme')" } });
check(textOf(r).includes('dark'), 'the page reads it', textOf(r));
r = await client.callTool({ name: 'browser_localstorage_list', arguments: {} });
check(!r.isError && /^theme=dark$/m.test(textOf(r)), 'browser_localstorage_list lists it', textOf(r));
r = await client.callTool({ name: 'browser_localstorage_get', arguments: { key: 'nope' } });
check(/localStorage key 'nope' not found/.test(textOf(r)), 'a missing key is said so', textOf(r));
r = await client.callTool({ name: 'browser_sessionstorage_set', arguments: { key: 'step', value: '2' } });
r = await client.callTool({ name: 'browser_sessionstorage_get', arguments: { key: 'step' } });
check(!r.isError && textOf(r) === 'step=2', 'browser_sessionstorage_get gets an item', textOf(r));
r = await client.callTool({ name: 'browser_sessionstorage_delete', arguments: { key: 'step' } });
check(!r.isError && /Removed 1 sessionStorage item/.test(textOf(r)), 'browser_sessionstorage_delete removes it', textOf(r));
r = await client.callTool({ name: 'browser_localstorage_clear', arguments: {} });
check(!r.isError && /Removed [1-9]\d* localStorage item/.test(textOf(r)), 'browser_localstorage_clear clears it', textOf(r));
r = await client.callTool({ name: 'browser_localstorage_list', arguments: {} });
check(/No localStorage items found/.test(textOf(r)), 'no items are left', textOf(r));

r = await client.callTool({ name: 'browser_close', arguments: {} });
check(!r.isError && /is closed/.test(textOf(r)), 'close the session');
await client.close();
console.log('done');
