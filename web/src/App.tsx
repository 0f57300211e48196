// The designer: the scenario list at #/, a scenario's editor at #/scenarios/NAME, the audit log
// at #/audit (admins). Hash routes, so that the server serves one page at /. Who the user is
// comes first (GET /api/me): without an identity, and with sign-in offered, the sign-in page.
import { useEffect, useMemo, useState } from 'react';
import { api, problemText, UNAUTHENTICATED_EVENT, type Components } from './api/client';
import { AuditLog } from './AuditLog';
import { AuthContext, roleAllows, SignIn, type AuthValue, type Me } from './auth';
import { Editor } from './editor/Editor';
import { leaveQuestion, setLeaveGuard } from './leaveGuard';
import { ScenarioList } from './ScenarioList';

type Route = { page: 'list' } | { page: 'audit' } | { page: 'editor'; name: string };

function route(): Route {
  const m = /^#\/scenarios\/(.+)$/.exec(location.hash);
  if (m) return { page: 'editor', name: decodeURIComponent(m[1]) };
  if (location.hash === '#/audit') return { page: 'audit' };
  return { page: 'list' };
}

export function App() {
  const [r, setR] = useState(route);
  const [me, setMe] = useState<Me | null>(null);
  const [expired, setExpired] = useState(false);
  const [components, setComponents] = useState<Components | null>(null);
  const [error, setError] = useState('');

  // A leave the guard asks about (leaveQuestion): where to, and the question; the page stays
  // until it is answered.
  const [leaving, setLeaving] = useState<{ to: string; question: string } | null>(null);
  useEffect(() => {
    let shown = location.hash;
    const onHash = (e: HashChangeEvent) => {
      if (location.hash === shown) return;
      const question = leaveQuestion();
      if (question) {
        // Back, Forward or a typed URL: the URL has changed already. The page's comes back
        // as a new entry (so that Back asks again) while the question is asked.
        const to = location.hash;
        history.pushState(history.state, '', e.oldURL);
        setLeaving({ to, question });
        return;
      }
      shown = location.hash;
      setR(route());
    };
    window.addEventListener('hashchange', onHash);
    // A link of the designer asks before it is followed: staying leaves the history as it was.
    const onClick = (e: MouseEvent) => {
      if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      const a = e.target instanceof Element ? e.target.closest('a[href^="#"]') : null;
      const to = a?.getAttribute('href');
      if (!to || to === location.hash) return;
      const question = leaveQuestion();
      if (!question) return;
      e.preventDefault();
      setLeaving({ to, question });
    };
    document.addEventListener('click', onClick, true);
    const on401 = () => setExpired(true);
    window.addEventListener(UNAUTHENTICATED_EVENT, on401);
    return () => {
      window.removeEventListener('hashchange', onHash);
      document.removeEventListener('click', onClick, true);
      window.removeEventListener(UNAUTHENTICATED_EVENT, on401);
    };
  }, []);

  useEffect(() => {
    api.GET('/api/me').then(({ data, error }) => {
      if (error) setError(problemText(error));
      else setMe(data);
    });
  }, []);

  const signedIn = !!me?.signedIn && !expired;
  useEffect(() => {
    if (!signedIn) return;
    api.GET('/api/components').then(({ data, error }) => {
      if (error) setError(problemText(error));
      else setComponents(data);
    });
  }, [signedIn]);

  const auth = useMemo<AuthValue | null>(() => (me ? { me, can: (want) => roleAllows(me.role, want) } : null), [me]);

  if (!me || !auth) return <div className="page muted">{error ? `Who you are could not be loaded: ${error}` : 'Loading…'}</div>;
  if (!me.signedIn || (expired && !me.signIn && !me.tokenSignIn)) {
    // refused: the session cookie the browser sent has expired or was ended elsewhere.
    if (me.signIn || me.tokenSignIn) return <SignIn expired={expired || me.refused} oidc={me.signIn} token={me.tokenSignIn} />;
    return <div className="page field-error" data-testid="unauthenticated">This server needs credentials (an API token); the designer has no sign-in configured.</div>;
  }
  if (error) return <div className="page field-error">The server's node kinds could not be loaded: {error}</div>;
  let content;
  if (r.page === 'list') content = <ScenarioList />;
  else if (r.page === 'audit') content = <AuditLog />;
  else if (!components) content = <div className="page muted">Loading…</div>;
  else content = <Editor key={r.name} name={r.name} components={components} />;
  // A session that ends while a page is open (a 401) keeps the page, and an editor's unsaved
  // changes, under a note: signing in again in another tab renews the session for this one.
  const resume = () =>
    api.GET('/api/me').then(({ data }) => {
      if (data?.signedIn) {
        setMe(data);
        setExpired(false);
      }
    });
  return (
    <AuthContext.Provider value={auth}>
      {content}
      {expired && <SessionEnded onResume={resume} />}
      {leaving && (
        <div className="page-note leave-confirm" role="alertdialog" aria-label="Leave this page?" data-testid="leave-confirm">
          <p>{leaving.question}</p>
          <div className="row">
            <button type="button" onClick={() => setLeaving(null)} data-testid="leave-stay">
              Stay
            </button>
            <button
              type="button"
              className="danger"
              onClick={() => {
                setLeaveGuard(null);
                setLeaving(null);
                location.hash = leaving.to;
              }}
              data-testid="leave-go"
            >
              Leave and lose them
            </button>
          </div>
        </div>
      )}
    </AuthContext.Provider>
  );
}

/** The note over a page whose session has ended. */
function SessionEnded({ onResume }: { onResume: () => Promise<void> }) {
  const [asked, setAsked] = useState(false);
  return (
    <div className="page-note" role="alertdialog" aria-label="Your session has ended" data-testid="session-ended">
      <p>
        Your session has ended. What is on this page stays here, unsaved changes included:{' '}
        <a href="/auth/login" target="_blank" rel="noopener" data-testid="session-sign-in">
          sign in again in a new tab
        </a>
        , then go on here.
      </p>
      {asked && <p className="field-error small">Not signed in yet.</p>}
      <button
        type="button"
        className="primary"
        data-testid="session-resume"
        onClick={() => {
          setAsked(false);
          onResume().then(() => setAsked(true));
        }}
      >
        Go on here
      </button>
    </div>
  );
}
