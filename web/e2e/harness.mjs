// What the browser tests share: a real scenario server on a free port with a new data
// directory, and Debian's Chromium driven by playwright-core, failing on any console error.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const webDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const repoDir = resolve(webDir, '..');
export const shotsDir = join(webDir, 'test-results');

/** Chromium: CHROMIUM_PATH, else Debian's package. */
export const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/**
 * Starts the server: SCENARIO_SERVER_BIN if set, else a binary built from this repository.
 * Returns its base URL, its binary and data directory, and a stop function that ends it and
 * removes its data.
 * opts.args(url) gives more flags (it gets the server's base URL, for a redirect URL), opts.env
 * more environment variables.
 */
export async function startServer(opts = {}) {
  const tmp = mkdtempSync(join(tmpdir(), 'designer-e2e-'));
  let bin = process.env.SCENARIO_SERVER_BIN;
  if (!bin) {
    bin = join(tmp, 'scenario-server');
    execFileSync('go', ['build', '-o', bin, './cmd/scenario-server'], { cwd: repoDir, stdio: 'inherit' });
  }
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = ['--addr', `127.0.0.1:${port}`, '--data-dir', join(tmp, 'data'), ...(opts.args ? opts.args(url) : [])];
  const env = { ...process.env, ...(opts.env ?? {}) };
  const proc = spawn(bin, args, { cwd: repoDir, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (d) => (log += d));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`the server exited (${proc.exitCode}):\n${log}`);
    try {
      const r = await fetch(`${url}/readyz`);
      if (r.ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`the server did not get ready:\n${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    bin,
    dataDir: join(tmp, 'data'),
    log: () => log,
    stop: async () => {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await new Promise((r) => proc.once('exit', r));
      }
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/** Chromium with the flags this machine needs, and a page that records console errors. */
export async function openBrowser() {
  mkdirSync(shotsDir, { recursive: true });
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const consoleErrors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`console: ${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => consoleErrors.push(`page error: ${e.message}`));
  return { browser, page, consoleErrors };
}

/** Saves a screenshot as test-results/NAME.png. */
export async function shot(page, name) {
  await page.screenshot({ path: join(shotsDir, `${name}.png`) });
}

/** Drags a node kind from the palette onto the canvas at (x, y) in the canvas's own pixels. */
export async function dragFromPalette(page, kindId, x, y) {
  await page.getByTestId(`palette-${kindId}`).dragTo(page.getByTestId('canvas'), { targetPosition: { x, y } });
}

/** Draws an edge from a node's output handle to another node's input. The handles are
 * measured once the canvas has stopped moving (fitting the view after a load animates it), so
 * that a loaded machine does not make the drag miss. */
export async function connect(page, fromId, handle, toId) {
  const from = page.getByTestId(`handle-${fromId}-${handle}`);
  const to = page.locator(`.react-flow__node[data-id="${toId}"] .react-flow__handle.target`);
  let src = await from.boundingBox();
  let dst = await to.boundingBox();
  for (let i = 0; i < 50; i++) {
    await page.waitForTimeout(50);
    const [s2, d2] = [await from.boundingBox(), await to.boundingBox()];
    const still = s2.x === src.x && s2.y === src.y && d2.x === dst.x && d2.y === dst.y;
    [src, dst] = [s2, d2];
    if (still) break;
  }
  await page.mouse.move(src.x + src.width / 2, src.y + src.height / 2);
  await page.mouse.down();
  await page.mouse.move(dst.x + dst.width / 2, dst.y + dst.height / 2, { steps: 12 });
  await page.mouse.up();
}

/** The canvas node of a scenario node id. */
export function node(page, id) {
  return page.locator(`.react-flow__node[data-id="${id}"]`);
}

/** Selects a node by clicking its title. */
export async function select(page, id) {
  await node(page, id).locator('.node-id').click();
  await page.getByTestId('tab-node').click();
  await page.waitForFunction((want) => document.querySelector('[data-testid="node-id"]')?.value === want, id);
}

/** Replaces the text of an expression field (CodeMirror) by typing text. */
export async function typeExpression(page, field, text) {
  const content = page.locator(`[data-testid="${field}"] .cm-content`);
  await content.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace');
  if (text) await page.keyboard.type(text, { delay: 15 });
  await page.keyboard.press('Escape'); // close a completion list that may be open
}

/** The text of an expression field. */
export async function expressionText(page, field) {
  return page.locator(`[data-testid="${field}"] .cm-content`).innerText();
}
