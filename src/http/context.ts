/** What the HTTP layer knows about a caller once authenticated. */
import type { Mode, Scope } from '../auth/scopes';

export interface Caller {
  accountId: string;
  accountName: string;
  keyId: string;
  mode: Mode;
  scopes: Scope[];
  /** Set when a console session (not a key) authenticated; `keyId` is then the user's id. */
  user?: { id: string; email: string; role: 'admin' | 'member' };
}

export interface RequestState {
  requestId: string;
  clientIp: string;
  caller?: Caller;
  /** The route template (e.g. /v1/messages/{id}) for metrics and logs. */
  routeName?: string;
}
