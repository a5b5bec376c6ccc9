// flags.mjs - the Chromium binary and flags every Playwright peer uses: the
// same as refgate's pool/spawn.c gives its browsers (Playwright adds its own
// --headless, --remote-debugging-pipe and --user-data-dir), so both sides of
// a comparison drive the same browser the same way. Keep in step with
// pool/spawn.c.
export const EXECUTABLE = process.env.REFGATE_CHROMIUM || '/usr/lib/chromium/chromium';

export const FLAGS = [
    '--no-sandbox',
    '--disable-gpu',
    '--in-process-gpu',
    '--disable-dev-shm-usage',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-features=PreloadTopChromeWebUI,WebUIOmniboxPopup,WebUIOmniboxAimPopup,SpareRendererForSitePerProcess,' +
        'AutofillServerCommunication,RenderDocument',
];

// For pages from the corpus: remote hosts fail at once instead of waiting on DNS.
export const RESOLVER = '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1';
