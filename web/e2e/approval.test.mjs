// Four-eyes deploy end to end, in Debian's Chromium against the real server started with
// --deploy-approval and an OpenID Connect provider started here: a deployer asks to deploy and
// cannot approve her own request; another deployer approves it and the scenario runs; an admin
// finds the request and the approval, by whom, in the audit log. Screenshots go to
// test-results/approval-*.png. Any browser console error fails.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { node, shot } from './harness.mjs';
import { startWithProvider } from './oidc-provider.mjs';

const SCENARIO = 'limits';

const USERS = {
  anna: { sub: 'u-anna', name: 'Anna Asker', email: 'anna@example.com', roles: ['deployer'] },
  ben: { sub: 'u-ben', name: 'Ben Approver', email: 'ben@example.com', roles: ['deployer'] },
  ada: { sub: 'u-ada', name: 'Ada Admin', email: 'ada@example.com', roles: ['admin'] },
};

let setup;
let provider;
let server;
let page;

before(async () => {
  setup = await startWithProvider(USERS, ['--deploy-approval']);
  ({ provider, server, page } = setup);
});

after(() => setup?.close());

const noConsoleErrors = (step) => setup.noConsoleErrors(step);
const signIn = (user) => setup.signIn(user);
const signOut = () => setup.signOut();

async function openDeployTab() {
  await page.goto(`${server.url}/#/scenarios/${encodeURIComponent(SCENARIO)}`);
  await node(page, 'payments').waitFor();
  await page.getByTestId('tab-deploy').click();
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

test('four-eyes deploy', async (t) => {
  await t.test('create a scenario through the API', async () => {
    const res = await fetch(`${server.url}/api/scenarios`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${provider.token('ada')}` },
      body: JSON.stringify({ name: SCENARIO, graph, comment: 'created' }),
    });
    assert.equal(res.status, 201, await res.text());
  });

  await t.test('a direct deploy through the API is refused: approval required', async () => {
    const res = await fetch(`${server.url}/api/scenarios/${SCENARIO}/deploy`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${provider.token('anna')}` },
      body: '{}',
    });
    assert.equal(res.status, 409);
    assert.equal((await res.json()).code, 'approval-required');
  });

  await t.test('anna asks to deploy and cannot approve her own request', async () => {
    await signIn('anna');
    await openDeployTab();
    await page.getByTestId('approval-required').waitFor();
    assert.equal(await page.getByTestId('deploy').innerText(), 'Ask to deploy v1');
    await page.getByTestId('deploy-comment').fill('raise the limit');
    await page.getByTestId('deploy').click();
    const pending = page.locator('[data-testid="deploy-request"][data-status="PENDING"]');
    await pending.waitFor();
    assert.match(await pending.innerText(), /asked by Anna Asker/);
    assert.equal(await page.getByTestId('approve-deploy').isDisabled(), true);
    await page.getByTestId('needs-other-approver').waitFor();
    assert.equal(await page.getByTestId('deploy-status').innerText(), 'NOT_DEPLOYED');
    await shot(page, 'approval-01-asked');
    noConsoleErrors('asking');
    await signOut();
  });

  await t.test('ben approves, and the scenario runs', async () => {
    await signIn('ben');
    await openDeployTab();
    const pending = page.locator('[data-testid="deploy-request"][data-status="PENDING"]');
    await pending.waitFor();
    assert.equal(await page.getByTestId('approve-deploy').isDisabled(), false);
    await page.getByTestId('decision-comment').fill('checked with risk');
    await page.getByTestId('approve-deploy').click();
    await page.getByTestId('deploy-status').filter({ hasText: 'RUNNING' }).waitFor({ timeout: 20_000 });
    const approved = page.locator('[data-testid="deploy-request"][data-status="APPROVED"]');
    await approved.waitFor();
    assert.match(await approved.innerText(), /approved by Ben Approver/);
    await shot(page, 'approval-02-approved');
    noConsoleErrors('approving');
    await signOut();
  });

  await t.test('the admin finds both in the audit log', async () => {
    await signIn('ada');
    await page.getByTestId('audit-link').click();
    await page.getByTestId('audit').waitFor();
    for (const [action, who] of [
      ['deploy.request', USERS.anna.name],
      ['deploy.approve', USERS.ben.name],
    ]) {
      await page.getByTestId('audit-action').selectOption(action);
      // The entries read with this filter (not those of the one before, still shown while it loads).
      await page.locator(`[data-testid="audit"][data-action="${action}"]`).waitFor();
      const row = page.getByTestId('audit-entry').filter({ has: page.getByTestId('audit-what').filter({ hasText: new RegExp(`^${action.replace('.', '\\.')}$`) }) });
      await row.first().waitFor();
      assert.equal(await row.count(), 1, action);
      assert.equal(await row.getByTestId('audit-who').innerText(), who);
      assert.equal(await row.getByTestId('audit-version').innerText(), 'v1');
      assert.equal(await row.getByTestId('audit-outcome-value').innerText(), 'ok');
    }
    await shot(page, 'approval-03-audit');
    noConsoleErrors('the audit log');
  });
});
