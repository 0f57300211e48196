// Where an HTTP source takes its events: the URL, and a curl command that sends the first sample
// record (or an empty one) to it.
import { useAuth } from '../auth';
import { CopyText } from './CopyText';

/** The URL the HTTP source node id of a scenario takes events at. */
export function ingestionURL(origin: string, scenario: string, sourceId: string): string {
  return `${origin}/api/scenarios/${encodeURIComponent(scenario)}/sources/${encodeURIComponent(sourceId)}/events`;
}

/** A shell word: the text in single quotes, its own single quotes escaped. */
export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** A curl command posting a JSON array of records to the URL; with a token variable when the server checks credentials. */
export function curlCommand(url: string, records: unknown[], token: boolean): string {
  const lines = [`curl -X POST ${shellQuote(url)}`, `  -H 'Content-Type: application/json'`];
  if (token) lines.push(`  -H "Authorization: Bearer $SCENARIO_TOKEN"`);
  lines.push(`  --data ${shellQuote(JSON.stringify(records))}`);
  return lines.join(' \\\n');
}

export function IngestionInfo({ scenario, sourceId, sample }: { scenario: string; sourceId: string; sample: unknown }) {
  const { me } = useAuth();
  const url = ingestionURL(window.location.origin, scenario, sourceId);
  const curl = curlCommand(url, [sample ?? {}], me.method !== 'none');
  return (
    <div className="param ingestion" data-testid="ingestion">
      <div className="param-label">Send events</div>
      <div className="muted small">While the scenario is deployed, POST a JSON record, or a JSON array of them, to:</div>
      <div className="row">
        <code className="url" data-testid="ingestion-url">
          {url}
        </code>
        <CopyText text={url} what="the URL" />
      </div>
      <pre className="curl" data-testid="ingestion-curl">
        {curl}
      </pre>
      {sample === undefined && (
        <div className="muted small" data-testid="ingestion-no-sample">
          No sample record yet, so the command sends an empty one: give the Test tab records and it sends the first.
        </div>
      )}
      <CopyText text={curl} what="the curl command" />
    </div>
  );
}
