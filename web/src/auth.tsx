// Who the designer's user is (GET /api/me), what their role allows, and what happens on a 401:
// the sign-in screen. Roles include one another: viewer < editor < deployer < admin.
import { createContext, useContext } from 'react';
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
const local: Me = { signedIn: true, subject: 'local', name: 'local', role: 'admin', method: 'none', signIn: false, refused: false };
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
      {me.method === 'session' && (
        <button type="button" className="small" onClick={signOut} data-testid="sign-out">
          Sign out
        </button>
      )}
    </span>
  );
}

/** The page shown without an identity when the server offers sign-in. */
export function SignIn({ expired }: { expired: boolean }) {
  return (
    <div className="page sign-in" data-testid="sign-in-page">
      <h2>Scenario designer</h2>
      <p>{expired ? 'Your session has ended. Sign in again to go on.' : 'Sign in to see and edit scenarios.'}</p>
      <a className="button primary" href="/auth/login" data-testid="sign-in">
        Sign in
      </a>
    </div>
  );
}
