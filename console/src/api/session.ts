/** Session endpoints (docs/console.md): sign in, who am I, sign out, set a password from a one-time link. */
import { api, setActingAccount, setCsrfToken, setViewMode } from './client';

export interface User { id: string; email: string; role: 'admin' | 'member'; account: string | null }
export interface Session { user: User; csrf_token: string; accounts: string[] }

export async function loadSession(): Promise<Session | null> {
  try {
    const s = await api.get<Session>('/v1/session');
    adopt(s);
    return s;
  } catch {
    return null;
  }
}

export async function signIn(email: string, password: string): Promise<Session> {
  await api.post('/v1/session', { email, password });
  // The sign-in answer has no account list; GET /v1/session has everything the shell needs.
  const s = await api.get<Session>('/v1/session');
  adopt(s);
  return s;
}

export async function signOut(): Promise<void> {
  await api.del('/v1/session');
  setCsrfToken('');
  setActingAccount('');
  sessionStorage.removeItem('pigeon.account');
  sessionStorage.removeItem('pigeon.mode');
}

export function setPassword(token: string, password: string): Promise<unknown> {
  return api.post('/v1/session/password', { token, password });
}

function adopt(s: Session): void {
  setCsrfToken(s.csrf_token);
  const saved = sessionStorage.getItem('pigeon.account');
  const home = s.user.account ?? s.accounts[0] ?? '';
  setActingAccount(s.user.role === 'admin' && saved && s.accounts.includes(saved) ? saved : home);
  setViewMode(sessionStorage.getItem('pigeon.mode') === 'test' ? 'test' : 'live');
}
