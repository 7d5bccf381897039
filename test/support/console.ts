/**
 * A console browser, as far as the API sees one: a user made in the database,
 * a client that signs in, keeps the session cookie and sends the CSRF token,
 * and optionally X-Pigeon-Account.
 */
import type { TestApp, ApiResponse } from './app';
import { ApiClient } from './app';
import { addUser } from '../../src/users/service';
import type { Role } from '../../src/users/store';

export const PASSWORD = 'correct horse battery staple';

/** A user with PASSWORD, or (password null) with a one-time set-password link instead. */
export async function makeUser(app: TestApp, email: string, role: Role, account?: string, password: string | null = PASSWORD) {
  return addUser(app.db, { email, role, account, password: password ?? undefined }, app.deps.clock.now(), app.config.http.publicUrl);
}

export class ConsoleClient {
  cookie = '';
  csrf = '';
  account = '';
  private readonly http: ApiClient;

  constructor(baseUrl: string) {
    this.http = new ApiClient(baseUrl, '');
  }

  /** Signs in; on success keeps the cookie and CSRF token. */
  async signIn(email: string, password = PASSWORD): Promise<ApiResponse> {
    const res = await this.http.post('/v1/session', { email, password }, this.cookie ? { cookie: this.cookie } : {});
    if (res.status === 200) {
      this.cookie = cookieOf(res) ?? this.cookie;
      this.csrf = res.body.csrf_token;
    }
    return res;
  }

  /** A request as the console sends it: cookie, CSRF token on changes, account header when set. */
  request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> {
    const sent: Record<string, string> = { ...(this.cookie ? { cookie: this.cookie } : {}), ...(this.account ? { 'x-pigeon-account': this.account } : {}) };
    if (method !== 'GET' && method !== 'HEAD' && this.csrf) sent['x-csrf-token'] = this.csrf;
    return this.http.request(method, path, body === undefined && method !== 'GET' && method !== 'DELETE' ? {} : body, { ...sent, ...headers });
  }

  get(path: string, headers?: Record<string, string>) {
    return this.request('GET', path, undefined, headers);
  }
  post(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request('POST', path, body ?? {}, headers);
  }
  delete(path: string, headers?: Record<string, string>) {
    return this.request('DELETE', path, undefined, headers);
  }
}

/** `name=value` of the pigeon_session Set-Cookie line, if any. */
export function cookieOf(res: ApiResponse): string | undefined {
  const line = res.headers.getSetCookie().find((l) => l.startsWith('pigeon_session='));
  return line?.split(';')[0];
}

export async function signedIn(app: TestApp, email: string): Promise<ConsoleClient> {
  const client = new ConsoleClient(app.http.url);
  const res = await client.signIn(email);
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${res.text}`);
  return client;
}
