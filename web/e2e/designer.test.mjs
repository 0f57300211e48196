// The designer end to end, in Debian's Chromium against the real server: build a scenario from
// scratch, complete and validate expressions, save, test on ten flights (counts marked stale by an
// edit, the side panel resized, result tables on one line and copied as JSON, a single-node test),
// deploy, send events (also with the curl command the HTTP source shows) and watch the live
// counts, reload and find it all there, compare versions field by field, merge a save conflict
// field by field, confirm a cancel; route a window's late events on its "late" edge and read them
// in the test panel and on the window timeline, complete #input from sample records alone and
// generate a schema from them, see a failing record's badge; draw the timeline of 10,000 flights
// and time it. Screenshots of the main steps go to test-results/. Any error in the browser
// console fails the test.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, dragFromPalette, expressionText, node, openBrowser, repoDir, select, shot, startServer, typeExpression } from './harness.mjs';

const SCENARIO = 'delayed flights';
const TEN_FLIGHTS = readFileSync(join(repoDir, 'testdata/flights-20k.ndjson'), 'utf8').split('\n').slice(0, 10).join('\n');
const SCHEMA = JSON.stringify({
  type: 'object',
  required: ['date', 'delay', 'origin'],
  properties: { date: { type: 'string' }, delay: { type: 'integer' }, origin: { type: 'string' }, destination: { type: 'string' } },
});

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

function noConsoleErrors(step) {
  assert.deepEqual(consoleErrors, [], `browser console errors after "${step}"`);
}

/** Waits for the completion list to offer label, then takes it with Enter. */
async function pickCompletion(label, screenshot) {
  const option = page.locator('.cm-tooltip-autocomplete li', { hasText: label }).first();
  await option.waitFor();
  // CodeMirror ignores Enter for 75 ms after the list (re)opens, and each key typed asks the
  // server again: wait until the answer to the last key is in.
  await page.waitForTimeout(300);
  if (screenshot) await shot(page, screenshot);
  await page.keyboard.press('Enter');
}

async function errorBadges() {
  return page.getByTestId('error-badge').count();
}

test('build, validate, save, test and reload a scenario', async (t) => {
  await t.test('create a scenario from the list', async () => {
    await page.goto(server.url + '/');
    await page.getByTestId('new-name').fill(SCENARIO);
    await page.getByTestId('create').click();
    await page.getByTestId('scenario-name').filter({ hasText: SCENARIO }).waitFor();
    await page.getByTestId('palette').waitFor();
    noConsoleErrors('create');
  });

  await t.test('drag a source, a filter, a tumbling window and a sink from the palette', async () => {
    await dragFromPalette(page, 'Source/http', 380, 70);
    await dragFromPalette(page, 'Filter', 380, 210);
    await dragFromPalette(page, 'CustomNode/aggregate-tumbling', 300, 360);
    await dragFromPalette(page, 'Sink/collect', 300, 510);
    for (const id of ['http source', 'filter', 'tumbling window', 'collect']) await node(page, id).waitFor();
    assert.equal(await page.locator('.react-flow__node').count(), 4);
  });

  await t.test('connect them, the filter by its true output', async () => {
    await connect(page, 'http source', 'out', 'filter');
    await connect(page, 'filter', 'FilterTrue', 'tumbling window');
    await connect(page, 'tumbling window', 'out', 'collect');
    await page.locator('.react-flow__edge').nth(2).waitFor({ state: 'attached' });
    assert.equal(await page.locator('.react-flow__edge').count(), 3);
    assert.equal(await page.locator('.react-flow__edge-text', { hasText: 'true' }).count(), 1);
    await shot(page, '01-graph-connected');
    noConsoleErrors('connect');
  });

  await t.test('fill in the source: schema and event time', async () => {
    await select(page, 'http source');
    await page.getByTestId('input-schema').fill(SCHEMA);
    await typeExpression(page, 'expr-timestamp', 'parseTime(#input.date, "yyyy/MM/dd HH:mm")');
    assert.equal(await expressionText(page, 'expr-timestamp'), 'parseTime(#input.date, "yyyy/MM/dd HH:mm")');
  });

  await t.test('type the filter expression with the completion list', async () => {
    await select(page, 'filter');
    await typeExpression(page, 'expr-expression', '');
    await page.keyboard.type('#input.de', { delay: 30 });
    await pickCompletion('delay', '02-completion');
    await page.keyboard.type(' > 15', { delay: 15 });
    assert.equal(await expressionText(page, 'expr-expression'), '#input.delay > 15');
  });

  await t.test('set up the tumbling window', async () => {
    await select(page, 'tumbling window');
    await page.getByTestId('input-windowLength').fill('1h');
    await page.getByTestId('add-groupBy').click();
    await typeExpression(page, 'groupBy-0', '#input.origin');
    await page.getByTestId('add-aggregation').click();
    await page.getByTestId('aggregation-name').first().waitFor();
  });

  await t.test('the sink writes the aggregate, picked from the completion list', async () => {
    await select(page, 'collect');
    await typeExpression(page, 'expr-value', '');
    await page.keyboard.type('#ag', { delay: 30 });
    await pickCompletion('#agg');
    assert.equal(await expressionText(page, 'expr-value'), '#agg');
  });

  await t.test('the graph is valid: no error badges', async () => {
    await page.getByTestId('problem-count').filter({ hasText: 'valid' }).waitFor();
    assert.equal(await errorBadges(), 0);
    noConsoleErrors('valid graph');
  });

  await t.test('an invalid expression puts a badge on its node, fixing it takes it away', async () => {
    await select(page, 'filter');
    await typeExpression(page, 'expr-expression', '#input.delay >');
    const badge = node(page, 'filter').getByTestId('error-badge');
    await badge.waitFor();
    await page.getByTestId('field-error').first().waitFor();
    assert.equal(await errorBadges(), 1);
    await page.getByTestId('tab-problems').click();
    await page.getByTestId('problem').first().waitFor();
    await shot(page, '03-error-badge');
    await page.getByTestId('problem').first().click(); // jumps to the node and opens its form
    await page.waitForFunction(() => document.querySelector('[data-testid="node-id"]')?.value === 'filter');
    await typeExpression(page, 'expr-expression', '#input.delay > 15');
    await badge.waitFor({ state: 'detached' });
    await page.getByTestId('problem-count').filter({ hasText: 'valid' }).waitFor();
    assert.equal(await errorBadges(), 0);
    noConsoleErrors('error badge');
  });

  await t.test('save with a comment', async () => {
    await page.getByTestId('save').click();
    await page.getByTestId('save-comment').fill('delays over 15 minutes per origin and hour');
    await page.getByTestId('save-confirm').click();
    await page.getByTestId('status').filter({ hasText: 'saved version 2' }).waitFor();
    await page.getByTestId('dirty').waitFor({ state: 'detached' });
    noConsoleErrors('save');
  });

  await t.test('paste ten flights, run the test and read the counts on the nodes', async () => {
    await page.getByTestId('tab-test').click();
    await page.getByTestId('test-records').fill(TEN_FLIGHTS);
    await page.getByTestId('run-test').click();
    await page.getByTestId('test-result').waitFor();
    const count = async (id) => Number(await node(page, id).getByTestId('test-count').innerText());
    assert.equal(await count('http source'), 10);
    assert.equal(await count('filter'), 10);
    assert.equal(await count('tumbling window'), 3); // delays of 66, 95 and 29 minutes
    assert.equal(await count('collect'), 3);
    assert.equal(await page.getByTestId('window-results').locator('tbody tr').count(), 3);
    // Each node's records in a panel of their own, every record a row.
    const records = page.getByTestId('node-records-filter');
    if (!(await records.evaluate((d) => d.open))) await records.locator('summary').click();
    await records.getByTestId('node-record').nth(9).waitFor();
    assert.equal(await records.getByTestId('node-record').count(), 10);
    assert.match(await records.innerText(), /"delay":66/);
    await shot(page, '04-test-counts');
    await page.getByTestId('window-results').scrollIntoViewIfNeeded();
    await shot(page, '04b-window-results');
    noConsoleErrors('test');
  });

  await t.test('test and live counts have a legend; an edit marks the test counts stale, undoing it clears the mark', async () => {
    const badge = node(page, 'filter').getByTestId('test-count');
    assert.equal(await badge.getAttribute('data-stale'), null);
    assert.match(await page.getByTestId('counts-legend').innerText(), /records in the test/);
    await select(page, 'filter');
    await typeExpression(page, 'expr-expression', '#input.delay > 16');
    await node(page, 'filter').locator('[data-testid="test-count"][data-stale="true"]').waitFor();
    assert.equal(await node(page, 'collect').getByTestId('test-count').getAttribute('data-stale'), 'true');
    assert.match(await page.getByTestId('counts-legend').innerText(), /stale: the graph changed since/);
    await page.getByTestId('tab-test').click();
    await page.getByTestId('test-stale').waitFor();
    await page.getByTestId('tab-node').click();
    // The edges carry the same mark.
    assert.ok((await page.locator('.react-flow__edge.edge-count-stale').count()) >= 1);
    await shot(page, '04c-stale-counts');
    await typeExpression(page, 'expr-expression', '#input.delay > 15');
    await node(page, 'filter').locator('[data-testid="test-count"]:not([data-stale])').waitFor();
    await page.getByTestId('dirty').waitFor({ state: 'detached' });
    await page.getByTestId('tab-test').click();
    await page.getByTestId('test-result').waitFor();
    assert.equal(await page.getByTestId('test-stale').count(), 0);
    noConsoleErrors('stale counts');
  });

  await t.test('a single-node test runs the filter on typed variables', async () => {
    await select(page, 'filter');
    const box = page.getByTestId('node-test');
    await box.locator('summary').click();
    // Filled with the first sample record: a delay of 66 minutes.
    assert.match(await page.getByTestId('node-test-variables').inputValue(), /"delay": 66/);
    await page.getByTestId('node-test-run').click();
    const result = page.getByTestId('node-test-result');
    await result.waitFor();
    assert.match(await result.locator('tr', { hasText: 'expression' }).innerText(), /expression\s+true/);
    assert.equal(await result.getByTestId('node-test-output').innerText(), 'FilterTrue → tumbling window');
    await page.getByTestId('node-test-variables').fill('{"input": {"date": "2001/01/01 00:47", "delay": 5, "origin": "DTW"}}');
    await page.getByTestId('node-test-run').click();
    await result.locator('tr.expression-value code', { hasText: /^false$/ }).waitFor();
    assert.match(await result.locator('tr', { hasText: 'expression' }).innerText(), /expression\s+false/);
    assert.equal(await result.getByTestId('node-test-output').innerText(), 'FilterFalse → goes no further (not connected)');
    await box.scrollIntoViewIfNeeded();
    await shot(page, '04e-node-test');
    noConsoleErrors('node test');
  });

  await t.test('the side panel resizes; result tables keep each value on one line and copy as JSON', async () => {
    await page.getByTestId('tab-test').click();
    const panel = page.getByTestId('side-panel');
    const w0 = (await panel.boundingBox()).width;
    const bar = await page.getByTestId('side-splitter').boundingBox();
    await page.mouse.move(bar.x + bar.width / 2, bar.y + 200);
    await page.mouse.down();
    await page.mouse.move(bar.x + bar.width / 2 - 200, bar.y + 200, { steps: 8 });
    await page.mouse.up();
    const w1 = (await panel.boundingBox()).width;
    assert.ok(Math.abs(w1 - (w0 + 200)) <= 2, `dragged 200 px left: ${w0} -> ${w1}`);
    await page.getByTestId('side-splitter').focus();
    await page.keyboard.press('ArrowRight');
    assert.ok(Math.abs((await panel.boundingBox()).width - (w1 - 20)) <= 1);
    // Every key and output is one line box: nothing wraps inside a token.
    const windows = page.getByTestId('window-results');
    await windows.scrollIntoViewIfNeeded();
    const lineBoxes = await windows.locator('td code').evaluateAll((els) => els.map((e) => e.getClientRects().length));
    assert.equal(lineBoxes.length, 6);
    assert.deepEqual(lineBoxes, [1, 1, 1, 1, 1, 1]);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    await windows.getByRole('button', { name: 'Copy as JSON' }).click();
    await windows.getByRole('button', { name: 'Copied' }).waitFor();
    const copied = JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
    assert.equal(copied.length, 3);
    // One-hour windows, each with its bounds.
    for (const r of copied) assert.equal(r.window.end - r.window.start, 3_600_000);
    await shot(page, '04d-wide-panel');
    noConsoleErrors('resize');
  });

  await t.test('deploy with a comment', async () => {
    await page.getByTestId('tab-deploy').click();
    await page.getByTestId('deploy-status').filter({ hasText: 'NOT_DEPLOYED' }).waitFor();
    await page.getByTestId('deploy-comment').fill('first deployment');
    await page.getByTestId('deploy').click();
    await page.getByTestId('deploy-status').filter({ hasText: 'RUNNING' }).waitFor();
    noConsoleErrors('deploy');
  });

  await t.test('POST events to the running scenario: the live counts on the nodes change', async () => {
    const liveCount = (id) => node(page, id).getByTestId('live-count');
    await liveCount('filter').filter({ hasText: /^0$/ }).waitFor();
    const events = [
      { date: '2001/01/01 00:47', delay: 66, origin: 'DTW' },
      { date: '2001/01/01 00:50', delay: 20, origin: 'DTW' },
      // Its event time moves the watermark past 01:00, closing DTW's first hour.
      { date: '2001/01/01 03:00', delay: 30, origin: 'LAS' },
    ];
    const url = `${server.url}/api/scenarios/${encodeURIComponent(SCENARIO)}/sources/${encodeURIComponent('http source')}/events`;
    const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(events) });
    assert.equal(res.status, 202, await res.text());
    await liveCount('filter').filter({ hasText: /^3$/ }).waitFor();
    await liveCount('tumbling window').filter({ hasText: /^3$/ }).waitFor();
    await liveCount('collect').filter({ hasText: /^1$/ }).waitFor();
    // The collect sink's result is stored at the next checkpoint (every second).
    await page.getByTestId('sink-results-collect').filter({ hasText: '"count":2' }).waitFor();
    await shot(page, '05-deployed-live-counts');
    noConsoleErrors('live counts');
  });

  await t.test('an event that fails is a dead letter, shown in the deploy panel', async () => {
    const url = `${server.url}/api/scenarios/${encodeURIComponent(SCENARIO)}/sources/${encodeURIComponent('http source')}/events`;
    const bad = { date: 'yesterday', delay: 99, origin: 'DTW' };
    const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify([bad]) });
    assert.equal(res.status, 202, await res.text());
    // Stored with the checkpoint that covers it: offset 3, after the three events above.
    const letter = page.getByTestId('dead-letter').filter({ hasText: 'yesterday' });
    await letter.waitFor();
    const text = await letter.innerText();
    assert.match(text, /http source, offset 3\)/);
    assert.match(text, /timestamp/);
    await shot(page, '05b-dead-letter');
    noConsoleErrors('dead letter');
  });

  await t.test('a test run while deployed says the nodes show the live counts', async () => {
    await page.getByTestId('tab-test').click();
    await page.getByTestId('run-test').click();
    await page.getByTestId('test-result').filter({ hasText: "The nodes show the running deployment's counts; this test's are in the table below." }).waitFor();
    assert.equal(await node(page, 'filter').getByTestId('test-count').count(), 0);
    await node(page, 'filter').getByTestId('live-count').waitFor();
    await page.getByTestId('tab-deploy').click();
    noConsoleErrors('test while deployed');
  });

  await t.test('reload: the saved scenario is all still there', async () => {
    await page.reload();
    for (const id of ['http source', 'filter', 'tumbling window', 'collect']) await node(page, id).waitFor();
    assert.equal(await page.locator('.react-flow__edge').count(), 3);
    assert.equal(await page.getByTestId('version').innerText(), 'v2');
    assert.equal(await page.getByTestId('dirty').count(), 0);
    await select(page, 'filter');
    assert.equal(await expressionText(page, 'expr-expression'), '#input.delay > 15');
    await page.getByTestId('tab-history').click();
    await page.getByTestId('version-2').filter({ hasText: 'delays over 15 minutes' }).waitFor();
    await page.getByTestId('problem-count').filter({ hasText: 'valid' }).waitFor();
    await node(page, 'filter').getByTestId('live-count').filter({ hasText: /^3$/ }).waitFor();
    await page.getByTestId('tab-deploy').click();
    await page.getByTestId('deploy-status').filter({ hasText: 'RUNNING' }).waitFor();
    await page.getByTestId('sink-results-collect').filter({ hasText: '"count":2' }).waitFor();
    await shot(page, '06-after-reload');
    noConsoleErrors('reload');
  });

  await t.test('the HTTP source shows its ingestion URL and a curl command that works', async () => {
    await select(page, 'http source');
    const url = `${server.url}/api/scenarios/delayed%20flights/sources/http%20source/events`;
    assert.equal(await page.getByTestId('ingestion-url').innerText(), url);
    const curl = await page.getByTestId('ingestion-curl').innerText();
    assert.ok(curl.startsWith(`curl -X POST '${url}'`), curl);
    assert.match(curl, /"delay":66/); // the first sample record
    assert.equal(await page.getByTestId('ingestion-no-sample').count(), 0); // so no hint of an empty one
    await page.getByTestId('ingestion').scrollIntoViewIfNeeded();
    await shot(page, '06b-ingestion-curl');
    const code = execFileSync('sh', ['-c', `${curl} -s -o /dev/null -w '%{http_code}'`], { encoding: 'utf8' });
    assert.equal(code, '202');
    await node(page, 'filter').getByTestId('live-count').filter({ hasText: /^4$/ }).waitFor();
    noConsoleErrors('curl');
  });

  await t.test('compare versions 1 and 2: the added nodes are highlighted', async () => {
    await page.getByTestId('tab-history').click();
    await page.getByTestId('compare-from').selectOption('1');
    await page.getByTestId('compare-to').selectOption('2');
    await page.getByTestId('compare').click();
    await page.getByTestId('comparison').waitFor();
    await page.locator('.scenario-node.diff-added').nth(3).waitFor();
    assert.equal(await page.locator('.scenario-node.diff-added').count(), 4);
    await shot(page, '07-compare');
    await page.getByTestId('comparison').getByRole('button', { name: 'Clear' }).click();
    assert.equal(await page.locator('.scenario-node.diff-added').count(), 0);
  });

  /** Saves the canvas with a comment and waits for the version. */
  async function save(comment, version) {
    await page.getByTestId('save').click();
    await page.getByTestId('save-comment').fill(comment);
    await page.getByTestId('save-confirm').click();
    await page.getByTestId('status').filter({ hasText: `saved version ${version}` }).waitFor();
  }

  await t.test('compare two versions of a filter: both expressions are shown, > 100 and > 200', async () => {
    await select(page, 'filter');
    await typeExpression(page, 'expr-expression', '#input.delay > 100');
    await save('over 100', 3);
    // v2 runs: its live counts are not put on v3's graph (a node of the same id may be
    // another node), and the toolbar says whose they are.
    await page.getByTestId('live-elsewhere').filter({ hasText: 'live counts are of v2' }).waitFor();
    assert.equal(await node(page, 'filter').getByTestId('live-count').count(), 0);
    await typeExpression(page, 'expr-expression', '#input.delay > 200');
    await save('over 200', 4);
    await page.getByTestId('tab-history').click();
    await page.getByTestId('compare-from').selectOption('3');
    await page.getByTestId('compare-to').selectOption('4');
    await page.getByTestId('compare').click();
    const diff = page.getByTestId('comparison').getByTestId('difference');
    await diff.first().waitFor();
    assert.equal(await diff.count(), 1);
    assert.match(await diff.innerText(), /node changed filter/);
    const merge = diff.getByTestId('expression-diff');
    assert.equal(await merge.locator('[aria-label="before"]').innerText(), '#input.delay > 100');
    assert.equal(await merge.locator('[aria-label="after"]').innerText(), '#input.delay > 200');
    // The changed characters are marked in both.
    assert.ok((await merge.locator('.cm-changedText').count()) >= 2);
    assert.equal(await node(page, 'filter').locator('.badge-diff-changed').count(), 1);
    await shot(page, '07b-compare-expressions');
    await page.getByTestId('comparison').getByRole('button', { name: 'Clear' }).click();
    noConsoleErrors('compare fields');
  });

  await t.test('a save conflict is merged field by field: their window length is kept, the filter is chosen', async () => {
    // A colleague saves version 5 from version 4: the filter at > 300 and two-hour windows.
    const base = `${server.url}/api/scenarios/${encodeURIComponent(SCENARIO)}`;
    const latest = await (await fetch(base)).json();
    const graph = latest.latest.graph;
    graph.nodes.find((n) => n.id === 'filter').expression.expression = '#input.delay > 300';
    graph.nodes.find((n) => n.id === 'tumbling window').parameters.find((p) => p.name === 'windowLength').value = '2h';
    const res = await fetch(`${base}/versions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ baseVersion: 4, graph, comment: 'colleague' }) });
    assert.ok(res.ok, await res.text());
    // Meanwhile, here, from version 4: the filter at > 250.
    await select(page, 'filter');
    await typeExpression(page, 'expr-expression', '#input.delay > 250');
    await page.getByTestId('save').click();
    await page.getByTestId('save-comment').fill('over 250');
    await page.getByTestId('save-confirm').click();
    const conflict = page.getByTestId('conflict');
    await conflict.getByTestId('merge').waitFor();
    // The browser logs the save's 409 answer, which is the conflict itself: the only error allowed here.
    const expected = consoleErrors.filter((e) => /status of 409 \(Conflict\).*\/versions\)$/.test(e));
    assert.equal(expected.length, 1, consoleErrors.join('\n'));
    consoleErrors.splice(consoleErrors.indexOf(expected[0]), 1);
    const theirs = conflict.getByTestId('their-change');
    assert.equal(await theirs.count(), 1);
    assert.match(await theirs.innerText(), /tumbling window · windowLength\s+1h\s*→\s*2h/);
    const rows = conflict.getByTestId('merge-conflict');
    assert.equal(await rows.count(), 1);
    assert.match(await rows.innerText(), /filter · expression\s+#input.delay > 200\s+#input.delay > 300\s+#input.delay > 250/);
    assert.equal(await page.getByTestId('apply-merge').isDisabled(), true);
    await shot(page, '07c-conflict');
    await rows.getByTestId('take-mine').check();
    await page.getByTestId('apply-merge').click();
    await conflict.waitFor({ state: 'detached' });
    assert.equal(await page.getByTestId('version').innerText(), 'v5');
    await select(page, 'filter');
    assert.equal(await expressionText(page, 'expr-expression'), '#input.delay > 250');
    await select(page, 'tumbling window');
    assert.equal(await page.getByTestId('input-windowLength').inputValue(), '2h');
    await save('over 250, merged', 6);
    const saved = (await (await fetch(base)).json()).latest.graph;
    assert.equal(saved.nodes.find((n) => n.id === 'filter').expression.expression, '#input.delay > 250');
    assert.equal(saved.nodes.find((n) => n.id === 'tumbling window').parameters.find((p) => p.name === 'windowLength').value, '2h');
    noConsoleErrors('conflict');
  });

  await t.test('copy and paste, undo and redo, delete', async () => {
    await node(page, 'filter').locator('.node-id').click();
    await page.keyboard.press('Control+C');
    await page.keyboard.press('Control+V');
    await node(page, 'filter 2').waitFor();
    assert.equal(await page.locator('.react-flow__node').count(), 5);
    await page.getByTestId('undo').click();
    await node(page, 'filter 2').waitFor({ state: 'detached' });
    await page.getByTestId('redo').click();
    await node(page, 'filter 2').waitFor();
    await node(page, 'filter 2').locator('.node-id').click();
    await page.keyboard.press('Delete');
    await node(page, 'filter 2').waitFor({ state: 'detached' });
    assert.equal(await page.locator('.react-flow__node').count(), 4);
    await page.keyboard.press('Control+Z');
    await node(page, 'filter 2').waitFor();
    await page.getByTestId('layout').click();
    await shot(page, '08-paste-layout');
    noConsoleErrors('copy, paste, undo');
  });

  await t.test('cancel asks for confirmation before stopping the deployment', async () => {
    await page.getByTestId('tab-deploy').click();
    await page.getByTestId('deploy-status').filter({ hasText: 'RUNNING' }).waitFor();
    // v6 is saved, v2 runs: deploying v6 would start its windows empty, and the panel says so.
    await page.getByTestId('deploy-other-version').filter({ hasText: 'Deploying v6 replaces the running v2' }).waitFor();
    await page.getByTestId('cancel-deployment').click();
    const confirm = page.getByTestId('cancel-confirm');
    await confirm.waitFor();
    assert.match(await confirm.innerText(), /Stop the running deployment of v2\?/);
    await shot(page, '08b-cancel-confirm');
    await page.getByTestId('cancel-confirm-no').click();
    await confirm.waitFor({ state: 'detached' });
    assert.equal(await page.getByTestId('deploy-status').innerText(), 'RUNNING');
    await page.getByTestId('cancel-deployment').click();
    await page.getByTestId('cancel-confirm-yes').click();
    await page.getByTestId('deploy-status').filter({ hasText: 'CANCELED' }).waitFor();
    noConsoleErrors('cancel');
  });

  await t.test('leaving with unsaved changes asks first: staying keeps them, leaving goes', async () => {
    await page.getByTestId('dirty').waitFor(); // the pasted filter 2 is not saved
    const before = await page.evaluate(() => history.length);
    await page.locator('a.back').click();
    const ask = page.getByTestId('leave-confirm');
    await ask.waitFor();
    assert.equal(await ask.locator('p').innerText(), `"${SCENARIO}" has unsaved changes. Leave it and lose them?`);
    await shot(page, '08c-leave-confirm');
    await page.getByTestId('leave-stay').click();
    await ask.waitFor({ state: 'detached' });
    assert.ok(page.url().endsWith(`#/scenarios/${encodeURIComponent(SCENARIO)}`), page.url());
    assert.equal(await page.evaluate(() => history.length), before, 'staying added a history entry');
    await node(page, 'filter 2').waitFor();
    await page.getByTestId('dirty').waitFor();
    await page.goBack(); // the browser's Back asks too
    await ask.waitFor();
    await node(page, 'filter 2').waitFor(); // still shown while asked
    await page.getByTestId('leave-go').click();
    await page.getByTestId('scenarios').waitFor();
    noConsoleErrors('leave');
  });
});

// A tumbling window of 10 s over events timed by #input.t with no out-of-orderness allowed: the
// record at 25 s closes the window [0 s, 10 s), so the record at 3 s after it is late.
const LATE_SCENARIO = 'late arrivals';
const LATE_RECORDS = ['{"t": 1000}', '{"t": 25000}', '{"t": 3000}'].join('\n');
const lateGraph = {
  nodes: [
    {
      id: 'events',
      type: 'Source',
      ref: {
        typ: 'http',
        parameters: [
          { name: 'timestamp', expression: { language: 'expr', expression: '#input.t' } },
          { name: 'maxOutOfOrderness', value: '0s' },
        ],
      },
      additionalFields: { layoutData: { x: 300, y: 0 } },
    },
    {
      id: 'per 10s',
      type: 'CustomNode',
      nodeType: 'aggregate-tumbling',
      outputVar: 'agg',
      parameters: [
        { name: 'groupBy', value: [] },
        { name: 'aggregations', value: [{ name: 'count', aggregator: 'Count' }] },
        { name: 'windowLength', value: '10s' },
        { name: 'emitWhen', value: 'OnEnd' },
      ],
      additionalFields: { layoutData: { x: 300, y: 150 } },
    },
    {
      id: 'results',
      type: 'Sink',
      ref: { typ: 'collect', parameters: [{ name: 'value', expression: { language: 'expr', expression: '#agg' } }] },
      additionalFields: { layoutData: { x: 150, y: 320 } },
    },
    {
      id: 'too late',
      type: 'Sink',
      ref: { typ: 'collect', parameters: [{ name: 'value', expression: { language: 'expr', expression: '#input' } }] },
      additionalFields: { layoutData: { x: 480, y: 320 } },
    },
  ],
  edges: [
    { from: 'events', to: 'per 10s', edgeType: null },
    { from: 'per 10s', to: 'results', edgeType: null },
  ],
};

test('route late events on a window\'s late edge and read them in the test panel', async (t) => {
  await t.test('open a scenario with a tumbling window and a sink not yet connected', async () => {
    const res = await fetch(`${server.url}/api/scenarios`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: LATE_SCENARIO, graph: lateGraph, comment: 'created' }),
    });
    assert.ok(res.ok, await res.text());
    await page.goto(`${server.url}/#/scenarios/${encodeURIComponent(LATE_SCENARIO)}`);
    for (const id of ['events', 'per 10s', 'results', 'too late']) await node(page, id).waitFor();
    assert.equal(await page.getByTestId('handle-per 10s-Late').innerText(), 'late');
  });

  await t.test('a saved version with errors cannot be deployed: the panel says why', async () => {
    await page.getByTestId('tab-deploy').click();
    const why = page.getByTestId('deploy-invalid');
    await why.waitFor();
    assert.equal(await why.innerText(), 'v1 has 1 error (see Problems): fix and save it to deploy.');
    assert.equal(await page.getByTestId('deploy').isDisabled(), true);
  });

  await t.test('drag from the window\'s late handle to the sink: a "late" edge', async () => {
    await connect(page, 'per 10s', 'Late', 'too late');
    const lateEdge = page.locator('.react-flow__edge.edge-Late');
    await lateEdge.waitFor({ state: 'attached' });
    assert.equal(await page.locator('.react-flow__edge').count(), 3);
    assert.equal(await lateEdge.locator('.react-flow__edge-text').textContent(), 'late');
  });

  await t.test('#late completes in the sink below the late edge', async () => {
    await select(page, 'too late');
    await typeExpression(page, 'expr-value', '');
    await page.keyboard.type('{"t": #input.t, "missed": #late.windowE', { delay: 20 });
    await pickCompletion('windowEnd');
    await page.keyboard.type('}', { delay: 20 });
    assert.equal(await expressionText(page, 'expr-value'), '{"t": #input.t, "missed": #late.windowEnd}');
    await page.getByTestId('problem-count').filter({ hasText: 'valid' }).waitFor();
    assert.equal(await errorBadges(), 0);
    noConsoleErrors('late edge');
  });

  await t.test('the test lists the late record with the window it missed, and the late sink got it', async () => {
    await page.getByTestId('tab-test').click();
    await page.getByTestId('test-records').fill(LATE_RECORDS);
    await page.getByTestId('run-test').click();
    await page.getByTestId('test-result').waitFor();
    const list = page.getByTestId('late-events-per 10s');
    await list.waitFor();
    assert.match(await list.innerText(), /1 late event, sent on the late edge to too late/);
    const events = list.getByTestId('late-event');
    assert.equal(await events.count(), 1);
    const ev = events.first();
    assert.match(await ev.locator('summary').innerText(), /^line 3 · 1970-01-01 00:00:03Z$/);
    assert.match(await ev.innerText(), /#input\s+\{"t":3000\}/);
    // The window [0 s, 10 s) it missed, its end printed as a time: 10000 ms.
    assert.equal(await ev.getByTestId('late-window').innerText(), '1970-01-01 00:00:00Z – 00:00:10Z');
    assert.equal(await ev.getByTestId('late-window').locator('span').nth(1).getAttribute('title'), '10000 ms since the epoch');
    assert.equal(await ev.getByTestId('late-watermark').innerText(), '1970-01-01 00:00:25Z');
    // The sink on the late edge wrote the late record; the window's results went on as before.
    const count = async (id) => Number(await node(page, id).getByTestId('test-count').innerText());
    assert.equal(await count('too late'), 1);
    assert.equal(await count('results'), 2); // windows [0 s, 10 s) and [20 s, 30 s)
    assert.equal(await node(page, 'per 10s').getByTestId('test-late').innerText(), '1 late');
    const lateSink = page.getByTestId('sink-outputs-too late');
    assert.equal(await lateSink.locator('li').count(), 1);
    assert.match(await lateSink.innerText(), /"missed":10000/);
    assert.match(await lateSink.innerText(), /"t":3000/);
    await list.scrollIntoViewIfNeeded();
    await shot(page, '09-late-events');
    noConsoleErrors('late events');
  });

  await t.test('the window timeline draws the windows and marks the late event, which hovering shows', async () => {
    const canvas = page.getByRole('img', { name: 'Window timeline' });
    await canvas.waitFor();
    const a = await canvas.evaluate((c) => ({ ...c.dataset }));
    // Events at 1 s, 25 s and 3 s (late); windows [0 s, 10 s) and [20 s, 30 s).
    assert.equal(Number(a.t0), 0);
    assert.equal(Number(a.t1), 30000);
    assert.match(await page.getByTestId('timeline-summary').innerText(), /^1 keys; 2 of 2 windows and 3 of 3 events listed; 1 late/);
    await canvas.scrollIntoViewIfNeeded();
    const box = await canvas.boundingBox();
    const x = box.x + Number(a.plotLeft) + (3000 / 30000) * Number(a.plotWidth);
    const y = box.y + Number(a.axisHeight) + Number(a.laneHeight) / 2;
    await page.mouse.move(x, y);
    const tip = page.getByTestId('timeline-tip');
    await tip.waitFor();
    assert.match(await tip.innerText(), /^late event, line 3, 1970-01-01 00:00:03Z\n.*"t":3000/);
    await shot(page, '09a-timeline-late');
    noConsoleErrors('timeline');
  });

  await t.test('completion of #input works from the sample records alone, and they generate a schema', async () => {
    // The source has no schema: the server alone offers no field of #input.
    const graph = { ...lateGraph, edges: [...lateGraph.edges, { from: 'per 10s', to: 'too late', edgeType: { type: 'Late' } }] };
    const res = await fetch(`${server.url}/api/suggestions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ graph, nodeId: 'too late', expression: '#input.', caret: 7 }),
    });
    assert.deepEqual((await res.json()).suggestions, []);
    assert.match(await page.getByTestId('inferred-schema').innerText(), /Completion of #input in events uses the types of these samples/);
    await select(page, 'too late');
    await typeExpression(page, 'expr-value', '');
    await page.keyboard.type('#input.', { delay: 30 });
    const option = page.locator('.cm-tooltip-autocomplete li', { has: page.locator('.cm-completionLabel', { hasText: /^t$/ }) });
    await option.waitFor();
    assert.match(await option.innerText(), /integer/);
    await page.waitForTimeout(300); // CodeMirror takes Enter 75 ms after the list opens
    await shot(page, '09b-completion-from-samples');
    await page.keyboard.press('Enter');
    assert.equal(await expressionText(page, 'expr-value'), '#input.t');
    await page.getByTestId('problem-count').filter({ hasText: 'valid' }).waitFor();

    await page.getByTestId('tab-test').click();
    await page.getByTestId('generate-schema').click();
    await select(page, 'events');
    const schema = JSON.parse(await page.getByTestId('input-schema').inputValue());
    assert.deepEqual(schema, { type: 'object', properties: { t: { type: 'integer' } }, required: ['t'] });
    noConsoleErrors('completion from samples');
  });

  await t.test('a record that fails puts an error badge on its node, and its panel lists it', async () => {
    await page.getByTestId('tab-test').click();
    await page.getByTestId('test-records').fill(LATE_RECORDS + '\n{"t": "soon"}');
    await page.getByTestId('run-test').click();
    const badge = node(page, 'events').getByTestId('runtime-errors');
    await badge.waitFor();
    assert.equal(await badge.innerText(), '1 failed');
    const panel = page.getByTestId('node-records-events');
    if (!(await panel.evaluate((d) => d.open))) await panel.locator('summary').click();
    assert.match(await panel.locator('.test-errors').innerText(), /line 4 timestamp: not an event time: "soon"/);
    await panel.scrollIntoViewIfNeeded();
    await shot(page, '09c-runtime-error-badge');
    noConsoleErrors('runtime errors');
  });

  await t.test('a timestamp in seconds is a warning of the test run', async () => {
    // 1,700,000,000 s is 2023-11-14; read as ms, 1970-01-20T16:13:20Z.
    await page.getByTestId('test-records').fill('{"t": 1700000000}\n{"t": 1700000030}');
    await page.getByTestId('run-test').click();
    const warnings = page.getByTestId('test-warnings');
    await warnings.waitFor();
    assert.match(await warnings.innerText(), /events timestamp: every event time is before 1973-03-03 \(the latest is 1700000030 ms, 1970-01-20T16:13:20.03Z\).*if the timestamp is in seconds, multiply it by 1000/);
    await page.getByTestId('test-records').fill(LATE_RECORDS);
    await page.getByTestId('run-test').click();
    await warnings.waitFor({ state: 'detached' });
    noConsoleErrors('warnings');
  });
});

// The window timeline for 10,000 flights: one lane per origin, hour windows, in a canvas.
const BIG_SCENARIO = 'ten thousand flights';
const TEN_THOUSAND = readFileSync(join(repoDir, 'testdata/flights-20k.ndjson'), 'utf8').split('\n').slice(0, 10000);
const bigGraph = {
  nodes: [
    {
      id: 'flights',
      type: 'Source',
      ref: {
        typ: 'http',
        parameters: [
          { name: 'timestamp', expression: { language: 'expr', expression: 'parseTime(#input.date, "yyyy/MM/dd HH:mm")' } },
          { name: 'maxOutOfOrderness', value: '10m' },
        ],
      },
      additionalFields: { layoutData: { x: 200, y: 0 } },
    },
    {
      id: 'per hour',
      type: 'CustomNode',
      nodeType: 'aggregate-tumbling',
      outputVar: 'agg',
      parameters: [
        { name: 'groupBy', value: [{ language: 'expr', expression: '#input.origin' }] },
        { name: 'aggregations', value: [{ name: 'count', aggregator: 'Count' }] },
        { name: 'windowLength', value: '1h' },
      ],
      additionalFields: { layoutData: { x: 200, y: 150 } },
    },
    {
      id: 'counts',
      type: 'Sink',
      ref: { typ: 'collect', parameters: [{ name: 'value', expression: { language: 'expr', expression: '#agg' } }] },
      additionalFields: { layoutData: { x: 200, y: 300 } },
    },
  ],
  edges: [
    { from: 'flights', to: 'per hour', edgeType: null },
    { from: 'per hour', to: 'counts', edgeType: null },
  ],
};

/** The oracle: per-origin hour windows of the flights in arrival order, with W = the latest time seen - 10 min; an event whose window has W >= its end is late. */
function hourWindows(lines) {
  const HOUR = 3_600_000;
  const windows = new Set();
  let latest = -Infinity;
  let late = 0;
  for (const line of lines) {
    const f = JSON.parse(line);
    const [d, hm] = f.date.split(' ');
    const [y, mo, da] = d.split('/').map(Number);
    const [h, mi] = hm.split(':').map(Number);
    const t = Date.UTC(y, mo - 1, da, h, mi);
    const start = Math.floor(t / HOUR) * HOUR;
    if (latest - 600_000 >= start + HOUR) late++;
    else windows.add(`${f.origin} ${start}`);
    latest = Math.max(latest, t);
  }
  return { windows: windows.size, late };
}

test('the window timeline of 10,000 flights', async (t) => {
  await t.test('run the test and draw the timeline: the time from Run test to the drawn timeline', async () => {
    const res = await fetch(`${server.url}/api/scenarios`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: BIG_SCENARIO, graph: bigGraph, comment: 'created' }),
    });
    assert.ok(res.ok, await res.text());
    // The late-events scenario has unsaved edges: opening another asks, and we leave it.
    assert.equal(await page.getByTestId('dirty').count(), 1);
    await page.goto(`${server.url}/#/scenarios/${encodeURIComponent(BIG_SCENARIO)}`);
    await page.getByTestId('leave-go').click();
    await node(page, 'per hour').waitFor();
    await page.getByTestId('tab-test').click();
    // Uploaded as a file, as one would (typing 900 kB into the text area is the browser's slow path).
    await page.getByTestId('test-upload').setInputFiles({ name: 'flights.ndjson', mimeType: 'application/x-ndjson', buffer: Buffer.from(TEN_THOUSAND.join('\n')) });
    await page.getByTestId('test-panel').getByText('10000 records').waitFor();
    await page.getByTestId('run-test').click();
    const canvas = page.getByRole('img', { name: 'Window timeline' });
    await canvas.waitFor({ timeout: 60_000 });
    await page.getByTestId('timeline-ready').waitFor();
    const ms = Number(await canvas.getAttribute('data-ready-ms'));
    assert.ok(ms > 0);
    console.log(`the window timeline of 10,000 flights was drawn ${ms.toFixed(0)} ms after Run test`);
    const want = hourWindows(TEN_THOUSAND);
    const summary = await page.getByTestId('timeline-summary').innerText();
    // The server lists the first 1,000 results and records of a node (maxRecordsPerNode); the totals cover all.
    assert.match(summary, new RegExp(`; 1000 of ${want.windows} windows and 1000 of 10000 events listed; ${want.late} late`));
    assert.equal(Number(await node(page, 'per hour').getByTestId('test-count').innerText()), 10000);
    await canvas.scrollIntoViewIfNeeded();
    await shot(page, '10-timeline-10k');
    // Scrolling the lanes redraws the canvas for the lanes in view.
    await page.locator('.timeline-scroll').evaluate((el) => el.scrollBy(0, 400));
    await shot(page, '10b-timeline-10k-scrolled');
    noConsoleErrors('timeline 10k');
  });
});

test('importing a file named as an existing scenario asks first, and imports as its next version', async () => {
  const name = 'imported-twice';
  const graph = { nodes: [{ id: 'http source', type: 'Source', ref: { typ: 'http', parameters: [] } }], edges: [] };
  const res = await fetch(`${server.url}/api/scenarios`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name, graph, comment: 'v1' }) });
  assert.ok(res.ok, await res.text());
  await page.goto(server.url + '/');
  await page.getByTestId('leave-go').click({ timeout: 2000 }).catch(() => {}); // unsaved edits of the test before
  await page.getByTestId('import-file').setInputFiles({ name: `${name}-v7.json`, mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(graph)) });
  await page.getByTestId('import').click();
  // Before, the file became v2 without a word.
  await page.getByTestId('import-into').filter({ hasText: `A scenario named ${name} exists (latest v1). Import the file as its v2?` }).waitFor();
  assert.equal((await (await fetch(`${server.url}/api/scenarios/${name}`)).json()).scenario.latestVersion, 1);
  // The create the import tries first was answered 409: the browser logs it.
  const conflict = consoleErrors.findIndex((e) => /status of 409 \(Conflict\) \(http:\/\/[^)]*\/api\/scenarios\)$/.test(e));
  assert.ok(conflict >= 0, `no 409 of the create in ${consoleErrors}`);
  consoleErrors.splice(conflict, 1);
  await page.getByTestId('import-into-confirm').click();
  await page.getByTestId('import-into').waitFor({ state: 'detached' });
  assert.equal((await (await fetch(`${server.url}/api/scenarios/${name}`)).json()).scenario.latestVersion, 2);
  // A new name is created (not imported on top of one someone created meanwhile).
  await page.getByTestId('import-file').setInputFiles({ name: 'imported-new.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(graph)) });
  await page.getByTestId('import').click();
  await page.getByTestId('scenarios').getByText('imported-new', { exact: true }).waitFor();
  const created = await (await fetch(`${server.url}/api/scenarios/imported-new/versions/1`)).json();
  assert.equal(created.comment, 'imported from imported-new.json');
  noConsoleErrors('import into an existing scenario');
});
