// Four-eyes deploy end to end, in Debian's Chromium against the real server started with
// --deploy-approval and an OpenID Connect provider started here: a deployer asks to deploy and
// cannot approve her own request; another deployer saves a test case the version fails, so his
// approval is refused until he approves anyway, and the scenario runs; an admin finds the
// request, the approvals and the override, by whom, in the audit log. Screenshots go to
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

  await t.test('ben saves a test case that v1 fails; his approval runs it and is refused', async () => {
    // {"amount": 5} goes to the sink as it is: expecting 6 fails.
    const res = await fetch(`${server.url}/api/scenarios/${SCENARIO}/tests/reviewer`, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${provider.token('ben')}` },
      body: JSON.stringify({ records: '{"amount": 5}\n', expected: { flagged: [{ amount: 6 }] } }),
    });
    assert.equal(res.status, 200, await res.text());
    await signIn('ben');
    await openDeployTab();
    const pending = page.locator('[data-testid="deploy-request"][data-status="PENDING"]');
    await pending.waitFor();
    assert.equal(await page.getByTestId('approve-deploy').isDisabled(), false);
    await page.getByTestId('decision-comment').fill('checked with risk');
    await page.getByTestId('approve-deploy').click();
    await page.getByTestId('approve-override').waitFor();
    assert.match(await page.getByTestId('decision-error').innerText(), /fails 1 of its 1 saved test cases/);
    assert.equal(await page.locator('[data-testid="deploy-request"][data-status="PENDING"]').count(), 1);
    assert.equal(await page.getByTestId('deploy-status').innerText(), 'NOT_DEPLOYED');
    await shot(page, 'approval-02-tests-failed');
    // The refused approval's 422 is logged by the browser: the only error allowed.
    const refused = setup.consoleErrors.filter((e) => /status of 422 \(Unprocessable Entity\).*\/deploy-requests\/\d+\/approve\)$/.test(e));
    assert.equal(refused.length, 1, setup.consoleErrors.join('\n'));
    setup.consoleErrors.splice(setup.consoleErrors.indexOf(refused[0]), 1);
    noConsoleErrors('a refused approval');
  });

  await t.test('ben approves anyway, and the scenario runs', async () => {
    assert.equal(await page.getByTestId('approve-override').isDisabled(), false);
    await page.getByTestId('approve-override').click();
    await page.getByTestId('deploy-status').filter({ hasText: 'RUNNING' }).waitFor({ timeout: 20_000 });
    const approved = page.locator('[data-testid="deploy-request"][data-status="APPROVED"]');
    await approved.waitFor();
    assert.match(await approved.innerText(), /approved by Ben Approver/);
    await shot(page, 'approval-03-approved');
    noConsoleErrors('approving');
    await signOut();
  });

  await t.test('the admin finds both in the audit log', async () => {
    await signIn('ada');
    await page.getByTestId('audit-link').click();
    await page.getByTestId('audit').waitFor();
    for (const [action, who, outcomes] of [
      ['deploy.request', USERS.anna.name, ['ok']],
      ['deploy.approve', USERS.ben.name, ['ok', 'tests-failed']],
      ['tests.override', USERS.ben.name, ['ok']],
    ]) {
      await page.getByTestId('audit-action').selectOption(action);
      // The entries read with this filter (not those of the one before, still shown while it loads).
      await page.locator(`[data-testid="audit"][data-action="${action}"]`).waitFor();
      const row = page.getByTestId('audit-entry').filter({ has: page.getByTestId('audit-what').filter({ hasText: new RegExp(`^${action.replace('.', '\\.')}$`) }) });
      await row.first().waitFor();
      assert.equal(await row.count(), outcomes.length, action);
      for (let i = 0; i < outcomes.length; i++) {
        assert.equal(await row.nth(i).getByTestId('audit-who').innerText(), who);
        assert.equal(await row.nth(i).getByTestId('audit-version').innerText(), 'v1');
        assert.equal(await row.nth(i).getByTestId('audit-outcome-value').innerText(), outcomes[i], `${action} #${i}`);
      }
    }
    await shot(page, 'approval-04-audit');
    noConsoleErrors('the audit log');
  });
});
