// Saved test cases end to end, in Debian's Chromium against the real server: run a test, save
// it as a test case (its sink outputs become the expected ones), run all tests (passed); a new
// version whose filter lets more through fails it; a deploy of that version is refused with the
// failure, and deployed only with "Deploy anyway" and a comment; the scenario list then shows it
// running, a page of 100 scenarios at a time, and a history a page of 100 versions at a time.
// Screenshots go to test-results/testcases-*.png. Browser console errors other than the refused
// deploy's 422 fail.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { node, openBrowser, shot, startServer } from './harness.mjs';

const SCENARIO = 'big payments';
let server;
let browser;
let page;
let consoleErrors;

before(async () => {
  server = await startServer();
  ({ browser, page, consoleErrors } = await openBrowser());
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const graph = (limit) => ({
  nodes: [
    { id: 'payments', type: 'Source', ref: { typ: 'http', parameters: [] }, additionalFields: { layoutData: { x: 200, y: 0 } } },
    { id: 'big', type: 'Filter', expression: { language: 'expr', expression: `#input.amount > ${limit}` }, additionalFields: { layoutData: { x: 200, y: 150 } } },
    {
      id: 'flagged',
      type: 'Sink',
      ref: { typ: 'collect', parameters: [{ name: 'value', expression: { language: 'expr', expression: '#input.amount' } }] },
      additionalFields: { layoutData: { x: 200, y: 300 } },
    },
  ],
  edges: [
    { from: 'payments', to: 'big', edgeType: null },
    { from: 'big', to: 'flagged', edgeType: { type: 'FilterTrue' } },
  ],
});

async function api(method, path, body) {
  const res = await fetch(server.url + path, { method, headers: { 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) });
  return { status: res.status, body: await res.json().catch(() => null) };
}

test('saved test cases guard a deploy', async (t) => {
  await t.test('run a test and save it as a test case', async () => {
    assert.equal((await api('POST', '/api/scenarios', { name: SCENARIO, graph: graph(100) })).status, 201);
    await page.goto(`${server.url}/#/scenarios/${encodeURIComponent(SCENARIO)}`);
    await node(page, 'payments').waitFor();
    await page.getByTestId('tab-test').click();
    // 250.0 is a float: saved as 250 (JSON.parse's number), the test case failed at once.
    await page.getByTestId('test-records').fill('{"amount": 50}\n{"amount": 150}\n{"amount": 250.0}');
    await page.getByTestId('run-test').click();
    await page.getByTestId('test-result').waitFor();
    await page.getByTestId('test-case-name').fill('over 100');
    await page.getByTestId('save-test-case').click();
    await page.getByTestId('test-case').filter({ hasText: 'over 100' }).waitFor();
    // What was saved: the records and the sink's outputs, 150 and 250.0 (worked out by hand),
    // the float as a float.
    const saved = await fetch(server.url + `/api/scenarios/${encodeURIComponent(SCENARIO)}/tests`).then((r) => r.text());
    assert.match(saved, /"expected":\{"flagged":\[150,250\.0\]\}/);
    await page.getByTestId('run-all-tests').click();
    await page.locator('[data-testid="test-case"][data-result="passed"]').waitFor();
    assert.match(await page.getByTestId('tests-run').innerText(), /Version 1: 1 of 1 passed/);
  });

  await t.test('a version that lets more through fails it, and its deploy is refused', async () => {
    assert.equal((await api('POST', `/api/scenarios/${encodeURIComponent(SCENARIO)}/versions`, { baseVersion: 1, graph: graph(10) })).status, 201);
    await page.reload();
    await node(page, 'payments').waitFor();
    await page.getByTestId('tab-test').click();
    await page.getByTestId('run-all-tests').click();
    const failed = page.locator('[data-testid="test-case"][data-result="failed"]');
    await failed.waitFor();
    assert.match(await failed.innerText(), /sink "flagged": wrote 3 values, expected 2; value #1 is 50, expected 150/);
    await shot(page, 'testcases-01-failed');

    await page.getByTestId('tab-deploy').click();
    await page.getByTestId('deploy').click();
    await page.getByTestId('deploy-error').waitFor();
    assert.match(await page.getByTestId('deploy-error').innerText(), /fails 1 of its 1 saved test cases.*use "Deploy anyway" below with a comment/);
    assert.equal(await page.getByTestId('deploy-status').innerText(), 'NOT_DEPLOYED');
    assert.equal(await page.getByTestId('deploy-override').isDisabled(), true, 'no override without a comment');
    await page.getByTestId('deploy-comment').fill('new limit agreed with risk');
    await page.getByTestId('deploy-override').click();
    await page.getByTestId('deploy-status').filter({ hasText: 'RUNNING' }).waitFor({ timeout: 20_000 });
    const d = await api('GET', `/api/scenarios/${encodeURIComponent(SCENARIO)}/deployment`);
    assert.equal(d.body.deployment.version, 2);
    assert.equal(d.body.deployment.comment, 'new limit agreed with risk (saved tests overridden: 1 of 1 failed)');
    await shot(page, 'testcases-02-overridden');
    // The refused deploy's 422 is logged by the browser: the only error allowed.
    const others = consoleErrors.filter((e) => !/status of 422 \(Unprocessable Entity\).*\/deploy\)$/.test(e));
    assert.deepEqual(others, []);
  });

  await t.test('the scenario list shows 100 scenarios with their statuses, and the rest on "Show more"', async () => {
    // With the server's example scenarios and "big payments" (running version 2), "list 000"
    // ... "list 099" make more than 100: the first page ends at the 100th name in byte order.
    for (let i = 0; i < 100; i++) {
      assert.equal((await api('POST', '/api/scenarios', { name: `list ${String(i).padStart(3, '0')}`, graph: graph(100) })).status, 201);
    }
    const all = (await api('GET', '/api/scenarios?limit=1000')).body.scenarios.map((s) => s.name);
    assert.ok(all.length > 100 && all.length < 200, `${all.length} scenarios`);
    await page.goto(server.url + '/');
    const rows = page.locator('[data-testid="scenarios"] tbody tr');
    await page.getByTestId(`scenario-${all[99]}`).waitFor();
    assert.equal(await rows.count(), 100);
    assert.equal(await page.getByTestId(`scenario-${all[100]}`).count(), 0);
    assert.equal(await page.getByTestId(`scenario-${SCENARIO}`).getByTestId('deployment-status').innerText(), 'running v2');
    assert.equal(await page.getByTestId('scenario-list 000').getByTestId('deployment-status').innerText(), 'not deployed');
    await page.getByTestId('more-scenarios').click();
    await page.getByTestId(`scenario-${all[all.length - 1]}`).waitFor();
    assert.equal(await rows.count(), all.length);
    assert.equal(await page.getByTestId('more-scenarios').count(), 0, 'no more pages');
    assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.testid.replace(/^scenario-/, ''))), all);
  });

  await t.test('the history shows the newest 100 versions, and the older ones on "Show older versions"', async () => {
    // "list 000" gets versions 2 to 101: 101 in all.
    for (let v = 2; v <= 101; v++) {
      assert.equal((await api('POST', '/api/scenarios/list%20000/versions', { baseVersion: v - 1, graph: graph(v), comment: `limit ${v}` })).status, 201);
    }
    await page.goto(`${server.url}/#/scenarios/list%20000`);
    await node(page, 'payments').waitFor();
    await page.getByTestId('tab-history').click();
    await page.getByTestId('version-2').waitFor();
    assert.equal(await page.locator('[data-testid^="version-"]').count(), 100);
    assert.equal(await page.getByTestId('version-1').count(), 0);
    await page.getByTestId('older-versions').click();
    await page.getByTestId('version-1').waitFor();
    assert.equal(await page.locator('[data-testid^="version-"]').count(), 101);
    assert.equal(await page.getByTestId('older-versions').count(), 0, 'no older versions');
    const others = consoleErrors.filter((e) => !/status of 422 \(Unprocessable Entity\).*\/deploy\)$/.test(e));
    assert.deepEqual(others, []);
  });
});
