// Sign-in, roles and the audit log end to end, in Debian's Chromium against the real server with
// an OpenID Connect provider started here (node:http and node:crypto only): sign in as a viewer
// and find the graph read-only and no deploy button; sign out; sign in as a deployer and deploy;
// sign in as an admin and find that deploy in the audit log, with the deployer's name and the
// client address. Screenshots go to test-results/auth-*.png. Any browser console error fails.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { createServer } from 'node:http';
import { node, openBrowser, select, shot, startServer } from './harness.mjs';

const CLIENT_ID = 'scenario-designer';
const CLIENT_SECRET = 'designer-secret';
const SCENARIO = 'card checks';

const USERS = {
  vera: { sub: 'u-vera', name: 'Vera Viewer', email: 'vera@example.com', roles: ['viewer'] },
  dan: { sub: 'u-dan', name: 'Dan Deployer', email: 'dan@example.com', roles: ['deployer'] },
  ada: { sub: 'u-ada', name: 'Ada Admin', email: 'ada@example.com', roles: ['admin'] },
};

const b64url = (b) => Buffer.from(b).toString('base64url');

/**
 * A tiny OpenID Connect provider: discovery, JWKS with one RSA key, /authorize that signs in
 * provider.user at once and redirects back with a code, /token that checks the client, the
 * redirect URI and PKCE (S256) and answers an RS256 ID token with the roles claim.
 */
async function startProvider() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = 'k1';
  const codes = new Map(); // code -> { user, nonce, challenge, redirectUri }
  const p = { user: null, issuer: '', tokens: 0, errors: [] };

  const idToken = (claims) => {
    const header = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid }));
    const body = b64url(JSON.stringify(claims));
    return `${header}.${body}.${b64url(sign('sha256', Buffer.from(`${header}.${body}`), privateKey))}`;
  };
  p.token = (user, extra = {}) => {
    const now = Math.floor(Date.now() / 1000);
    const u = USERS[user];
    return idToken({ iss: p.issuer, aud: CLIENT_ID, sub: u.sub, name: u.name, email: u.email, roles: u.roles, iat: now, exp: now + 600, ...extra });
  };

  const json = (res, status, v) => {
    res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
    res.end(JSON.stringify(v));
  };
  const fail = (res, status, error, description) => {
    p.errors.push(`${error}: ${description}`);
    json(res, status, { error, error_description: description });
  };

  const server = createServer(async (req, res) => {
    const url = new URL(req.url, p.issuer);
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(res, 200, {
        issuer: p.issuer,
        authorization_endpoint: `${p.issuer}/authorize`,
        token_endpoint: `${p.issuer}/token`,
        jwks_uri: `${p.issuer}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      });
    }
    if (url.pathname === '/jwks') {
      return json(res, 200, { keys: [{ ...publicKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'RS256' }] });
    }
    if (url.pathname === '/authorize') {
      const q = url.searchParams;
      const redirectUri = q.get('redirect_uri');
      if (q.get('client_id') !== CLIENT_ID || q.get('response_type') !== 'code' || !redirectUri) return fail(res, 400, 'invalid_request', 'client_id, response_type or redirect_uri');
      if (q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) return fail(res, 400, 'invalid_request', 'no S256 code challenge');
      if (!p.user) return fail(res, 400, 'access_denied', 'the test chose no user');
      const code = b64url(randomBytes(24));
      codes.set(code, { user: p.user, nonce: q.get('nonce'), challenge: q.get('code_challenge'), redirectUri });
      const back = new URL(redirectUri);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state') ?? '');
      res.writeHead(302, { Location: back.toString() });
      return res.end();
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      let body = '';
      for await (const chunk of req) body += chunk;
      const f = new URLSearchParams(body);
      let id = f.get('client_id');
      let secret = f.get('client_secret');
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
      if (basic) {
        const [u, s] = Buffer.from(basic[1], 'base64').toString().split(':').map(decodeURIComponent);
        [id, secret] = [u, s];
      }
      if (id !== CLIENT_ID || secret !== CLIENT_SECRET) return fail(res, 401, 'invalid_client', 'wrong client id or secret');
      const c = codes.get(f.get('code'));
      codes.delete(f.get('code'));
      if (f.get('grant_type') !== 'authorization_code' || !c) return fail(res, 400, 'invalid_grant', 'unknown or used code');
      if (f.get('redirect_uri') !== c.redirectUri) return fail(res, 400, 'invalid_grant', 'redirect_uri differs');
      const verifier = f.get('code_verifier') ?? '';
      if (b64url(createHash('sha256').update(verifier).digest()) !== c.challenge) return fail(res, 400, 'invalid_grant', 'PKCE verifier does not match the S256 challenge');
      p.tokens++;
      return json(res, 200, { access_token: b64url(randomBytes(24)), token_type: 'Bearer', expires_in: 600, id_token: p.token(c.user, { nonce: c.nonce }) });
    }
    res.writeHead(404).end();
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  p.issuer = `http://127.0.0.1:${server.address().port}`;
  p.close = () => new Promise((ok) => server.close(ok));
  return p;
}

let provider;
let server;
let browser;
let page;
let consoleErrors;

before(async () => {
  provider = await startProvider();
  server = await startServer({
    args: (url) => ['--oidc-issuer', provider.issuer, '--oidc-client-id', CLIENT_ID, '--oidc-redirect-url', `${url}/auth/callback`, '--oidc-roles-claim', 'roles'],
    env: { SCENARIO_SERVER_OIDC_CLIENT_SECRET: CLIENT_SECRET },
  });
  ({ browser, page, consoleErrors } = await openBrowser());
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await provider?.close();
});

function noConsoleErrors(step) {
  assert.deepEqual(consoleErrors, [], `browser console errors after "${step}"`);
}

/** From the sign-in page, signs in as user at the provider, and waits for the scenario list. */
async function signIn(user) {
  provider.user = user;
  await page.goto(server.url + '/');
  await page.getByTestId('sign-in-page').waitFor();
  await page.getByTestId('sign-in').click();
  await page.getByTestId('user-name').filter({ hasText: USERS[user].name }).waitFor();
  assert.deepEqual(provider.errors, []);
}

async function signOut() {
  await page.getByTestId('sign-out').click();
  await page.getByTestId('sign-in-page').waitFor();
}

const graph = {
  nodes: [
    { id: 'payments', type: 'Source', ref: { typ: 'http', parameters: [] }, additionalFields: { layoutData: { x: 200, y: 0 } } },
    {
      id: 'flagged',
      type: 'Sink',
      ref: { typ: 'collect', parameters: [{ name: 'value', expression: { language: 'expr', expression: '#input' } }] },
      additionalFields: { layoutData: { x: 200, y: 180 } },
    },
  ],
  edges: [{ from: 'payments', to: 'flagged', edgeType: null }],
};

test('sign in, roles and the audit log', async (t) => {
  await t.test('without a session: the sign-in page, and the API answers 401', async () => {
    await page.goto(server.url + '/');
    await page.getByTestId('sign-in-page').waitFor();
    const me = await (await fetch(`${server.url}/api/me`)).json();
    assert.equal(me.signedIn, false);
    assert.equal(me.signIn, true);
    assert.equal((await fetch(`${server.url}/api/scenarios`)).status, 401);
    await shot(page, 'auth-01-sign-in');
    noConsoleErrors('the sign-in page');
  });

  await t.test('create a scenario through the API with an admin bearer token from the provider', async () => {
    const res = await fetch(`${server.url}/api/scenarios`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${provider.token('ada')}` },
      body: JSON.stringify({ name: SCENARIO, graph, comment: 'created' }),
    });
    assert.equal(res.status, 201, await res.text());
  });

  await t.test('a viewer: name and role shown, no create, no audit link, a read-only graph, no deploy button', async () => {
    await signIn('vera');
    assert.equal(await page.getByTestId('user-role').innerText(), 'viewer');
    await page.getByTestId(`scenario-${SCENARIO}`).waitFor();
    assert.equal(await page.getByTestId('create').count(), 0);
    assert.equal(await page.getByTestId('import').count(), 0);
    assert.equal(await page.getByTestId('audit-link').count(), 0);
    assert.equal(await page.getByTestId(`scenario-${SCENARIO}`).getByRole('button', { name: 'Archive' }).count(), 0);
    await page.getByTestId(`scenario-${SCENARIO}`).getByRole('link', { name: SCENARIO }).click();
    await node(page, 'payments').waitFor();
    await page.getByTestId('read-only').waitFor();
    assert.equal(await page.getByTestId('palette').count(), 0);
    assert.equal(await page.getByTestId('save').count(), 0);
    assert.equal(await page.getByTestId('tab-test').count(), 0);
    // Dragging a node pans the view instead: the node keeps its place in the graph.
    const place = () => node(page, 'payments').evaluate((el) => el.style.transform);
    const was = await place();
    const box = await node(page, 'payments').boundingBox();
    await page.mouse.move(box.x + 20, box.y + 10);
    await page.mouse.down();
    await page.mouse.move(box.x + 220, box.y + 110, { steps: 8 });
    await page.mouse.up();
    assert.equal(await place(), was);
    assert.equal(await page.getByTestId('dirty').count(), 0);
    // The node form is there to read: its fields and expressions cannot be changed.
    await select(page, 'flagged');
    assert.equal(await page.getByTestId('node-id').isDisabled(), true);
    assert.equal(await page.locator('[data-testid="details-read-only"] .cm-content').first().getAttribute('contenteditable'), 'false');
    await page.getByTestId('tab-deploy').click();
    await page.getByTestId('deploy-not-allowed').waitFor();
    assert.match(await page.getByTestId('deploy-not-allowed').innerText(), /needs the deployer role; you have viewer/);
    assert.equal(await page.getByTestId('deploy').count(), 0);
    assert.equal(await page.getByTestId('cancel-deployment').count(), 0);
    await shot(page, 'auth-02-viewer');
    noConsoleErrors('the viewer');
  });

  await t.test('the viewer signs out', async () => {
    await signOut();
    const me = await page.evaluate(() => fetch('/api/me').then((r) => r.json()));
    assert.equal(me.signedIn, false);
  });

  await t.test('a deployer deploys', async () => {
    await signIn('dan');
    assert.equal(await page.getByTestId('user-role').innerText(), 'deployer');
    await page.goto(`${server.url}/#/scenarios/${encodeURIComponent(SCENARIO)}`);
    await node(page, 'payments').waitFor();
    await page.getByTestId('palette').waitFor(); // a deployer edits too
    await page.getByTestId('tab-deploy').click();
    await page.getByTestId('deploy-comment').fill('first run');
    await page.getByTestId('deploy').click();
    await page.getByTestId('deploy-status').filter({ hasText: 'RUNNING' }).waitFor({ timeout: 20_000 });
    await shot(page, 'auth-03-deployer');
    noConsoleErrors('the deployer');
    await signOut();
  });

  await t.test('an admin finds the deploy in the audit log: the deployer, the address, the version', async () => {
    await signIn('ada');
    await page.getByTestId('audit-link').click();
    await page.getByTestId('audit').waitFor();
    await page.getByTestId('audit-action').selectOption('deploy');
    const row = page.getByTestId('audit-entry').filter({ has: page.getByTestId('audit-what').filter({ hasText: /^deploy$/ }) });
    await row.first().waitFor();
    assert.equal(await row.count(), 1);
    assert.equal(await row.getByTestId('audit-who').innerText(), USERS.dan.name);
    assert.equal(await row.getByTestId('audit-address').innerText(), '127.0.0.1');
    assert.equal(await row.getByTestId('audit-scenario-name').innerText(), SCENARIO);
    assert.equal(await row.getByTestId('audit-version').innerText(), 'v1');
    assert.equal(await row.getByTestId('audit-outcome-value').innerText(), 'ok');
    await page.getByTestId('audit-action').selectOption('');
    await page.getByTestId('audit-entry').filter({ hasText: 'scenario.create' }).first().waitFor();
    await shot(page, 'auth-04-audit');
    noConsoleErrors('the audit log');
    assert.equal(provider.tokens, 3, 'three sign-ins through the provider');
  });

  await t.test('a 403 is explained in words', async () => {
    // A viewer's bearer token from the provider, as the designer would meet it.
    const res = await fetch(`${server.url}/api/scenarios/${encodeURIComponent(SCENARIO)}/cancel`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${provider.token('vera')}` },
      body: '{}',
    });
    assert.equal(res.status, 403);
    const p = await res.json();
    assert.equal(p.code, 'forbidden');
    assert.match(p.detail, /needs the deployer role; Vera Viewer has viewer/);
  });
});
