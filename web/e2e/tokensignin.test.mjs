// Signing in to the designer with an API token, in Debian's Chromium against the real server
// started with --auth-tokens and no OIDC provider: the sign-in page offers a token field (and
// no provider's button); a wrong token is refused on the page; the right one (made with
// `scenario-server token create`) opens the scenario list as its name and role, the token in
// an HttpOnly cookie the page's scripts cannot read; signing out comes back to the sign-in
// page; a revoked token's cookie signs nobody in. Screenshots go to test-results/token-*.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { openBrowser, shot, startServer } from './harness.mjs';

let server;
let browser;
let page;
let consoleErrors;

before(async () => {
  server = await startServer({ args: () => ['--auth-tokens'] });
  ({ browser, page, consoleErrors } = await openBrowser());
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const token = (...args) => execFileSync(server.bin, ['token', ...args, '--data-dir', server.dataDir], { encoding: 'utf8' }).trim();

test('sign in to the designer with an API token', async (t) => {
  const secret = token('create', '--name', 'dana', '--role', 'editor');
  assert.match(secret, /^sst_/);

  await t.test('the sign-in page offers a token field and no provider', async () => {
    await page.goto(server.url);
    await page.getByTestId('token-sign-in').waitFor();
    assert.equal(await page.getByTestId('sign-in').count(), 0, 'no OIDC sign-in button');
    await shot(page, 'token-sign-in');
  });

  await t.test('a wrong token is refused on the page', async () => {
    await page.getByTestId('token-input').fill('sst_not-a-token');
    await page.getByTestId('token-submit').click();
    await page.getByTestId('token-error').filter({ hasText: 'not accepted' }).waitFor();
  });

  await t.test('the right token opens the scenario list as dana, editor', async () => {
    await page.getByTestId('token-input').fill(secret);
    await page.getByTestId('token-submit').click();
    await page.getByTestId('user-name').filter({ hasText: 'dana' }).waitFor();
    assert.equal(await page.getByTestId('user-role').textContent(), 'editor');
    await page.getByText('flights-per-origin-hourly').first().waitFor();
    assert.equal(await page.evaluate(() => document.cookie), '', 'the token cookie is HttpOnly');
    await shot(page, 'token-signed-in');
  });

  await t.test('signing out comes back to the sign-in page', async () => {
    await page.getByTestId('sign-out').click();
    await page.getByTestId('token-sign-in').waitFor();
  });

  await t.test('a revoked token signs nobody in', async () => {
    await page.getByTestId('token-input').fill(secret);
    await page.getByTestId('token-submit').click();
    await page.getByTestId('user-name').filter({ hasText: 'dana' }).waitFor();
    token('revoke', '1'); // the store's first token: dana's
    await page.reload();
    await page.getByTestId('token-sign-in').waitFor();
    assert.match(await page.getByTestId('sign-in-page').textContent(), /session has ended/);
  });

  assert.deepEqual(
    consoleErrors.filter((e) => !/401|Unauthorized/.test(e)),
    [],
    'no console errors but the refused sign-in',
  );
});
