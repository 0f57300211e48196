// Who the designer's user is (GET /api/me), what their role allows, and what happens on a 401:
// the sign-in screen. Roles include one another: viewer < editor < deployer < admin.
import { createContext, useContext, useState, type FormEvent } from 'react';
import { startSigningOut, type Schemas } from './api/client';

export type Me = Schemas['Me'];
export type Role = 'viewer' | 'editor' | 'deployer' | 'admin';

const RANK: Record<string, number> = { viewer: 1, editor: 2, deployer: 3, admin: 4 };

/** Whether a held role includes the wanted one. */
export function roleAllows(held: string | undefined, want: Role): boolean {
  return (RANK[held ?? ''] ?? 0) >= RANK[want];
}

/** What an action needs, for a disabled button's title: "Deploying needs the deployer role; you have viewer". */
export function needsText(what: string, want: Role, held: string | undefined): string {
  return `${what} needs the ${want} role; you have ${held || 'none'}`;
}

export type AuthValue = { me: Me; can: (want: Role) => boolean };

// Without a provider (unit tests, the editor on its own) everything is allowed, as without
// authentication on the server.
const local: Me = { signedIn: true, subject: 'local', name: 'local', role: 'admin', method: 'none', signIn: false, tokenSignIn: false, refused: false };
export const AuthContext = createContext<AuthValue>({ me: local, can: () => true });

export function useAuth(): AuthValue {
  return useContext(AuthContext);
}

/** The signed-in user in a toolbar: name and role, and "Sign out" for a browser session. */
export function UserMenu() {
  const { me } = useAuth();
  if (!me.signedIn || me.method === 'none') return null;
  const signOut = async () => {
    startSigningOut();
    try {
      await fetch('/auth/logout', { method: 'POST', credentials: 'same-origin' });
    } finally {
      // Also when the request failed: the reload starts the page over, requests allowed
      // again, signed in or not as the server says.
      location.reload();
    }
  };
  return (
    <span className="user-menu row" data-testid="user-menu">
      <span data-testid="user-name">{me.name || me.subject}</span>
      <span className="badge" data-testid="user-role">
        {me.role}
      </span>
      {(me.method === 'session' || me.method === 'token-cookie') && (
        <button type="button" className="small" onClick={signOut} data-testid="sign-out">
          Sign out
        </button>
      )}
    </span>
  );
}

/** The page shown without an identity when the server offers sign-in: through the OIDC
 * provider (oidc), or with an API token (token: POST /auth/token, which keeps it in an
 * HttpOnly cookie; the page never stores it). */
export function SignIn({ expired, oidc = true, token = false }: { expired: boolean; oidc?: boolean; token?: boolean }) {
  const [secret, setSecret] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      const r = await fetch('/auth/token', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ token: secret.trim() }),
      });
      if (r.status === 204) {
        location.reload();
        return;
      }
      let detail = `${r.status} ${r.statusText}`;
      try {
        const p = await r.json();
        if (p?.detail) detail = p.detail;
      } catch {
        /* not a problem document */
      }
      setError(detail);
    } catch (err) {
      setError(String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="page sign-in" data-testid="sign-in-page">
      <h2>Scenario designer</h2>
      <p>{expired ? 'Your session has ended. Sign in again to go on.' : 'Sign in to see and edit scenarios.'}</p>
      {oidc && (
        <a className="button primary" href="/auth/login" data-testid="sign-in">
          Sign in
        </a>
      )}
      {token && (
        <form className="column" onSubmit={submit} data-testid="token-sign-in">
          <label>
            API token (<code>scenario-server token create</code>)
            <input
              type="password"
              autoComplete="off"
              value={secret}
              onChange={(e) => setSecret(e.target.value)}
              placeholder="sst_…"
              data-testid="token-input"
            />
          </label>
          <button type="submit" className={oidc ? '' : 'primary'} disabled={busy || !secret.trim()} data-testid="token-submit">
            Sign in with the token
          </button>
          {error && (
            <p className="field-error" data-testid="token-error">
              {error}
            </p>
          )}
        </form>
      )}
    </div>
  );
}
