// The designer: the scenario list at #/, a scenario's editor at #/scenarios/NAME. Hash routes,
// so that the server serves one page at /.
import { useEffect, useState } from 'react';
import { api, problemText, type Components } from './api/client';
import { Editor } from './editor/Editor';
import { ScenarioList } from './ScenarioList';

function route(): { page: 'list' } | { page: 'editor'; name: string } {
  const m = /^#\/scenarios\/(.+)$/.exec(location.hash);
  if (m) return { page: 'editor', name: decodeURIComponent(m[1]) };
  return { page: 'list' };
}

export function App() {
  const [r, setR] = useState(route);
  const [components, setComponents] = useState<Components | null>(null);
  const [error, setError] = useState('');

  useEffect(() => {
    const onHash = () => setR(route());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  useEffect(() => {
    api.GET('/api/components').then(({ data, error }) => {
      if (error) setError(problemText(error));
      else setComponents(data);
    });
  }, []);

  if (error) return <div className="page field-error">The server's node kinds could not be loaded: {error}</div>;
  if (r.page === 'list') return <ScenarioList />;
  if (!components) return <div className="page muted">Loading…</div>;
  return <Editor key={r.name} name={r.name} components={components} />;
}
