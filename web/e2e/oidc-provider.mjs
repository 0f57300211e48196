// A tiny OpenID Connect provider for the browser tests, started in the test (node:http and
// node:crypto only): it stands in for the external identity provider. See startProvider.
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { createServer } from 'node:http';
import { openBrowser, startServer } from './harness.mjs';

export const CLIENT_ID = 'scenario-designer';
export const CLIENT_SECRET = 'designer-secret';

const b64url = (b) => Buffer.from(b).toString('base64url');

/**
 * A tiny OpenID Connect provider: discovery, JWKS with one RSA key, /authorize that signs in
 * provider.user at once and redirects back with a code, /token that checks the client, the
 * redirect URI and PKCE (S256) and answers an RS256 ID token with the roles claim. users maps a
 * user's key to { sub, name, email, roles }; p.user is who signs in next, p.token(user) an ID token.
 */
export async function startProvider(USERS) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = 'k1';
  const codes = new Map(); // code -> { user, nonce, challenge, redirectUri }
  const p = { user: null, users: USERS, issuer: '', tokens: 0, errors: [] };

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

/** From the designer's sign-in page at serverUrl, signs in as user at provider, and waits until
 * the designer shows the user's name. */
export async function signIn(page, serverUrl, provider, user) {
  provider.user = user;
  await page.goto(serverUrl + '/');
  await page.getByTestId('sign-in-page').waitFor();
  await page.getByTestId('sign-in').click();
  await page.getByTestId('user-name').filter({ hasText: provider.users[user].name }).waitFor();
  if (provider.errors.length > 0) throw new Error(`the provider refused: ${provider.errors.join('; ')}`);
}

/** Signs out of the designer and waits for the sign-in page. */
export async function signOut(page) {
  // Requests the page sent before (a validation) are answered before the session ends.
  await page.waitForLoadState('networkidle');
  await page.getByTestId('sign-out').click();
  await page.getByTestId('sign-in-page').waitFor();
}

/**
 * The set-up of the sign-in tests: a provider with users, the server signing in with it
 * (roles from the "roles" claim; extraArgs after those flags) and a browser. The answer holds
 * provider, server, page, signIn(user), signOut(), noConsoleErrors(step) (fails on any browser
 * console error so far) and close(), which stops what was started.
 */
export async function startWithProvider(users, extraArgs = []) {
  const s = { provider: null, server: null, browser: null, page: null, consoleErrors: [] };
  s.close = async () => {
    await s.browser?.close();
    await s.server?.stop();
    await s.provider?.close();
  };
  try {
    s.provider = await startProvider(users);
    s.server = await startServer({
      args: (url) => [
        '--oidc-issuer', s.provider.issuer, '--oidc-client-id', CLIENT_ID, '--oidc-redirect-url', `${url}/auth/callback`,
        '--oidc-roles-claim', 'roles', ...extraArgs,
      ],
      env: { SCENARIO_SERVER_OIDC_CLIENT_SECRET: CLIENT_SECRET },
    });
    Object.assign(s, await openBrowser());
  } catch (e) {
    await s.close();
    throw e;
  }
  s.signIn = (user) => signIn(s.page, s.server.url, s.provider, user);
  s.signOut = () => signOut(s.page);
  s.noConsoleErrors = (step) => assert.deepEqual(s.consoleErrors, [], `browser console errors after "${step}"`);
  return s;
}
