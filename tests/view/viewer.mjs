// viewer.mjs - drives the live view's page (nginx/view.html) in a real
// browser, as a person watching and taking over a session would, while the
// "agent" (this script, over the HTTP API) works on the same session.
//
//   REFGATE_URL=http://127.0.0.1:PORT REFGATE_AUTH=<api key> \
//     node tests/view/viewer.mjs SID CONTROL_URL READONLY_URL OTHER_TOKEN
//
// CONTROL_URL and READONLY_URL are session.view_token's urls for SID;
// OTHER_TOKEN is a token of another session. Prints "ok N - what" per check
// and exits non-zero at the first that fails (test_view counts the oks).
import { chromium } from "playwright-core";

const [sid, ctlUrl, roUrl, otherToken] = process.argv.slice(2);
const base = process.env.REFGATE_URL;
const key = process.env.REFGATE_AUTH;
const WAIT_MS = 20000;

async function api(op, args) {
  const r = await fetch(`${base}/v1/sessions/${sid}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify({ op, args }),
  });
  const j = await r.json();
  if (!j.ok) throw new Error(`${op}: ${JSON.stringify(j.error)}`);
  return j.result;
}

async function until(what, fn) {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

let n = 0;
function ok(what) {
  console.log(`ok ${++n} - ${what}`);
}

// The centre of the element named name, in the page's CSS pixels.
async function centre(name) {
  const r = await api("observe", { format: "elements" });
  const e = r.elements.find((x) => x.name === name);
  if (!e) throw new Error(`no element named ${name}`);
  return { x: e.bounds.x + e.bounds.w / 2, y: e.bounds.y + e.bounds.h / 2 };
}

// A point of the session's page (1280 x 800) on the viewer's canvas, in the viewer's coordinates.
async function onCanvas(page, p) {
  const box = await page.locator("#screen").boundingBox();
  return { x: box.x + (p.x / 1280) * box.width, y: box.y + (p.y / 800) * box.height };
}

const frames = (page) => page.evaluate(() => Number(document.getElementById("screen").dataset.frames || 0));
const pixels = (page) => page.evaluate(() => document.getElementById("screen").toDataURL("image/png"));
const counter = async () => (await api("read", { target: "css:#n" })).value;

const browser = await chromium.launch({
  executablePath: "/usr/lib/chromium/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  headless: true,
});
try {
  // The window is smaller than the session's page: the canvas is scaled.
  const ctx = await browser.newContext({ viewport: { width: 1000, height: 700 } });
  const page = await ctx.newPage();
  await page.goto(base + ctlUrl);
  await until("the first frame", async () => (await frames(page)) >= 1);
  const mode = await page.locator("#mode").textContent();
  if (mode !== "control") throw new Error(`mode ${mode}`);
  ok("frames arrive on the canvas");

  // The agent clicks: the page changes, and so does the canvas.
  const before = await pixels(page);
  await api("click", { target: "css:#count" });
  await until("the canvas to change", async () => (await pixels(page)) !== before);
  if ((await counter()) !== "1") throw new Error("the agent's click did not count");
  ok("the canvas changes after the agent clicks");

  // A person clicks on the canvas at the button's box: it counts in the session.
  const btn = await onCanvas(page, await centre("Count"));
  await page.mouse.click(btn.x, btn.y);
  await until("the viewer's click to count", async () => (await counter()) === "2");
  ok("a click on the canvas clicks the element");

  // Typing reaches the field the click focused; the agent's ref still reads it.
  const field = await onCanvas(page, await centre("Name"));
  await page.mouse.click(field.x, field.y);
  await page.keyboard.type("hey");
  await until("the typed text", async () => (await api("read", { target: "label:Name", what: "value" })).value === "hey");
  ok("typing reaches the focused field");

  // A read-only link: the same click changes nothing, and the page says why.
  const ro = await ctx.newPage();
  await ro.goto(base + roUrl);
  await until("a frame on the read-only page", async () => (await frames(ro)) >= 1);
  const btn2 = await onCanvas(ro, await centre("Count"));
  await ro.mouse.click(btn2.x, btn2.y);
  await until("the refusal in the log", async () => /forbidden/.test(await ro.locator("#log").textContent()));
  if ((await counter()) !== "2") throw new Error("a read-only click counted");
  ok("a read-only link's clicks change nothing");

  // A forged link, and another session's token on this session: refused.
  const good = new URL(base + ctlUrl).searchParams.get("token");
  const forged = good.slice(0, -2) + (good.slice(-2, -1) === "A" ? "B" : "A") + good.slice(-1);
  for (const t of [forged, otherToken]) {
    const bad = await ctx.newPage();
    const ws = bad.waitForEvent("websocket");
    await bad.goto(`${base}/v1/sessions/${sid}/view?token=${encodeURIComponent(t)}`);
    await ws;
    await until("the refusal", async () => (await bad.evaluate(() => document.body.dataset.state)) === "refused");
    if ((await frames(bad)) !== 0) throw new Error("a bad token got frames");
    await bad.close();
  }
  ok("forged and other-session links are refused");

  // The session closes: the viewer shows that it ended.
  const r = await fetch(`${base}/v1/sessions/${sid}`, { method: "DELETE", headers: { Authorization: `Bearer ${key}` } });
  if (r.status !== 200) throw new Error(`close: ${r.status}`);
  await until("the end", async () => (await page.evaluate(() => document.body.dataset.state)) === "ended");
  const banner = await page.locator("#banner").textContent();
  if (!/ended/i.test(banner)) throw new Error(`banner: ${banner}`);
  ok("the viewer shows that the session ended");
} finally {
  await browser.close();
}
