// Saved test cases of the scenario (GET/PUT/DELETE /api/scenarios/{name}/tests, POST .../tests/run):
// sample records with the sink outputs they must give. Deploys run them first and refuse a
// version that fails one (the deploy panel offers an override with a comment).
import { useCallback, useEffect, useState } from 'react';
import { parse, stringify } from 'lossless-json';
import { api, problemText, type Schemas } from '../api/client';
import { useAuth } from '../auth';

type TestCase = Schemas['TestCase'];
type TestCasesRun = Schemas['TestCasesRun'];
type TestResult = Schemas['TestResult'];

/** The most values of one sink a test case compares (the server's). */
const COMPARED_PER_SINK = 1000;

/**
 * The sink outputs of a test run's answer (POST /api/test, its JSON text) as a test case
 * expects them: per sink its values, their numbers kept as the server wrote them
 * (lossless-json). JSON.parse made 66.0 the integer 66 and 1234567890123456789
 * 1234567890123456800, while the server compares a float with an integer, and integers by
 * their digits, exactly: the test case saved so failed at once, and every deploy after it was
 * refused (a new-user round).
 */
export function expectedOf(answer: string): Record<string, unknown[]> {
  const result = parse(answer) as { sinkOutputs?: Record<string, { outputs?: { value: unknown }[] | null }> } | null;
  const sinks: Record<string, unknown[]> = {};
  for (const [id, s] of Object.entries(result?.sinkOutputs ?? {})) sinks[id] = (s.outputs ?? []).map((o) => o.value);
  return sinks;
}

/** Why a test run's sink outputs cannot be saved as a test case ('' when they can): a sink wrote more than one compares. */
export function notSavable(result: TestResult): string {
  for (const [id, s] of Object.entries(result.sinkOutputs ?? {})) {
    if (s.truncated || s.total > COMPARED_PER_SINK) {
      return `sink "${id}" wrote ${s.total} values; a test case compares at most ${COMPARED_PER_SINK} a sink: test with fewer records to save one`;
    }
  }
  return '';
}

type Props = {
  name: string;
  records: string;
  onRecords: (text: string) => void;
  /** The last test run's result and its answer's JSON text, when it is of the graph as it is (not stale). */
  result: TestResult | undefined;
  answer: string | undefined;
};

export function SavedTests({ name, records, onRecords, result, answer }: Props) {
  const { can } = useAuth();
  const [tests, setTests] = useState<TestCase[]>([]);
  const [testName, setTestName] = useState('');
  const [run, setRun] = useState<TestCasesRun | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const load = useCallback(async () => {
    const { data } = await api.GET('/api/scenarios/{name}/tests', { params: { path: { name } } });
    if (data) setTests(data.tests ?? []);
  }, [name]);
  useEffect(() => {
    load();
  }, [load]);

  const refused = result ? notSavable(result) : '';
  const savable = !!result && !!answer && !refused;
  const save = async () => {
    if (!savable) return;
    setBusy(true);
    setError('');
    // Written by lossless-json: each number as the server wrote it.
    const body = stringify({ records, expected: expectedOf(answer) }) ?? '';
    const { error } = await api.PUT('/api/scenarios/{name}/tests/{test}', {
      params: { path: { name, test: testName.trim() } },
      body: { records, expected: {} },
      bodySerializer: () => body,
    });
    setBusy(false);
    if (error) setError(problemText(error));
    else setTestName('');
    await load();
  };
  const runAll = async () => {
    setBusy(true);
    setError('');
    const { data, error } = await api.POST('/api/scenarios/{name}/tests/run', { params: { path: { name } }, body: {} });
    setBusy(false);
    if (error) setError(problemText(error));
    setRun(data ?? null);
  };
  const remove = async (test: string) => {
    await api.DELETE('/api/scenarios/{name}/tests/{test}', { params: { path: { name, test } } });
    setRun(null);
    await load();
  };
  const byName = new Map((run?.tests ?? []).map((t) => [t.name, t]));

  return (
    <div className="saved-tests" data-testid="saved-tests">
      <h4>Saved test cases</h4>
      <div className="muted small">Deploys run them on the saved version and refuse it when one fails.</div>
      {can('editor') && (
        <div className="row">
          <input value={testName} placeholder="Test case name" onChange={(e) => setTestName(e.target.value)} data-testid="test-case-name" />
          <button
            type="button"
            className="small"
            disabled={busy || !savable || !testName.trim()}
            title={
              savable
                ? 'Saves these records with the sink outputs of the last run as what they must give'
                : refused || 'Run the test first: its sink outputs become the expected ones'
            }
            onClick={save}
            data-testid="save-test-case"
          >
            Save as test case
          </button>
          <span className="spacer" />
          <button type="button" className="small" disabled={busy || tests.length === 0} onClick={runAll} data-testid="run-all-tests">
            Run all tests
          </button>
        </div>
      )}
      {can('editor') && refused && (
        <div className="muted small" data-testid="test-case-refused">
          {refused}
        </div>
      )}
      {run && (
        <div className={run.passed ? 'tests-passed small' : 'field-error'} data-testid="tests-run">
          Version {run.version}: {(run.tests ?? []).filter((t) => t.passed).length} of {(run.tests ?? []).length} passed
        </div>
      )}
      {error && (
        <div className="field-error" data-testid="saved-tests-error">
          {error}
        </div>
      )}
      <ul className="version-list">
        {tests.map((t) => {
          const r = byName.get(t.name);
          return (
            <li key={t.name} data-testid="test-case" data-result={r ? (r.passed ? 'passed' : 'failed') : ''}>
              <b>{t.name}</b>{' '}
              {r && <span className={`badge ${r.passed ? 'badge-test' : 'badge-error'}`}>{r.passed ? 'passed' : 'failed'}</span>}{' '}
              <span className="muted small">
                {t.records.split('\n').filter((l) => l.trim()).length} records, by {t.author}
              </span>{' '}
              <button type="button" className="small" onClick={() => onRecords(t.records)}>
                Load records
              </button>
              {can('editor') && (
                <button type="button" className="small" onClick={() => remove(t.name)}>
                  Delete
                </button>
              )}
              {r && !r.passed && (
                <ul className="test-errors">
                  {(r.failures ?? []).map((f, i) => (
                    <li key={i}>{f}</li>
                  ))}
                </ul>
              )}
            </li>
          );
        })}
      </ul>
    </div>
  );
}
