// Sign-in, roles and the audit log end to end, in Debian's Chromium against the real server with
// an OpenID Connect provider started here (node:http and node:crypto only): sign in as a viewer
// and find the graph read-only and no deploy button; sign out; sign in as a deployer and deploy;
// sign in as an admin and find that deploy in the audit log, with the deployer's name and the
// client address. Screenshots go to test-results/auth-*.png. Any browser console error fails.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { expressionText, node, select, shot, typeExpression } from './harness.mjs';
import { startWithProvider } from './oidc-provider.mjs';

const SCENARIO = 'card checks';

const USERS = {
  vera: { sub: 'u-vera', name: 'Vera Viewer', email: 'vera@example.com', roles: ['viewer'] },
  dan: { sub: 'u-dan', name: 'Dan Deployer', email: 'dan@example.com', roles: ['deployer'] },
  ada: { sub: 'u-ada', name: 'Ada Admin', email: 'ada@example.com', roles: ['admin'] },
};

let setup;
let provider;
let server;
let page;

before(async () => {
  setup = await startWithProvider(USERS);
  ({ provider, server, page } = setup);
});

after(() => setup?.close());

const noConsoleErrors = (step) => setup.noConsoleErrors(step);
const signIn = (user) => setup.signIn(user);
const signOut = () => setup.signOut();

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
    // Nothing selected: the hint says it is read-only, not to drag from a palette it has not.
    assert.equal(await page.getByTestId('no-selection').innerText(), 'Select a node to see it (read-only: your role cannot edit).');
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
    await page.locator('[data-testid="audit"][data-action="deploy"]').waitFor(); // read with this filter
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
    // The page's reads of the log (filtered by deploy, then not) are one entry, which a
    // refresh shows with its repeats.
    await page.getByTestId('audit-refresh').click();
    const reads = page
      .getByTestId('audit-entry')
      .filter({ has: page.getByTestId('audit-what').filter({ hasText: /^audit\.read$/ }) })
      .filter({ has: page.getByTestId('audit-who').filter({ hasText: USERS.ada.name }) });
    await reads.getByTestId('audit-repeats').waitFor();
    assert.equal(await reads.count(), 1);
    assert.match(await reads.getByTestId('audit-repeats').innerText(), /×[2-9]/);
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

  await t.test('a session that ends under unsaved changes keeps them: sign in again in a new tab, go on', async () => {
    await signOut(); // the admin's
    await signIn('dan');
    await page.goto(`${server.url}/#/scenarios/${encodeURIComponent(SCENARIO)}`);
    await node(page, 'payments').waitFor();
    await select(page, 'flagged');
    await page.context().clearCookies(); // the session ends (expired, or signed out elsewhere)
    await typeExpression(page, 'expr-value', '{card: #input.card}'); // its validation meets the 401
    const note = page.getByTestId('session-ended');
    await note.waitFor();
    assert.match(await note.innerText(), /Your session has ended\. What is on this page stays here, unsaved changes included/);
    await page.getByTestId('dirty').waitFor();
    assert.equal(await page.getByTestId('sign-in-page').count(), 0);
    await shot(page, 'auth-05-session-ended');
    const [tab] = await Promise.all([page.context().waitForEvent('page'), page.getByTestId('session-sign-in').click()]);
    await tab.getByTestId('user-name').filter({ hasText: USERS.dan.name }).waitFor();
    await tab.close();
    await page.getByTestId('session-resume').click();
    await note.waitFor({ state: 'detached' });
    assert.equal(await expressionText(page, 'expr-value'), '{card: #input.card}');
    await page.getByTestId('dirty').waitFor();
    // The 401s of the ended session are the only errors in the console.
    const others = setup.consoleErrors.filter((e) => !/status of 401/.test(e));
    assert.deepEqual(others, []);
    setup.consoleErrors.length = 0;
  });
});
