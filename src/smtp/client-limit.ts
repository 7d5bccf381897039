/**
 * A cap on concurrent connections per client address, so one client (or one
 * misbehaving app with a leaking connection pool) cannot take every slot of
 * the listener. A client is its rate-limit key (an IPv6 address counts by
 * its /64, see net/client-key.ts). smtp-server calls onClose for every
 * connection, refused ones included, so release() is keyed by session id and
 * counts only admissions.
 */
import { rateLimitKey } from '../net/client-key';

export class ClientConnections {
  private readonly perAddress = new Map<string, number>();
  private readonly sessions = new Map<string, string>();

  constructor(private readonly max: number) {}

  /** True when the connection is admitted (and counted). */
  admit(sessionId: string, client: string): boolean {
    const address = rateLimitKey(client);
    const open = this.perAddress.get(address) ?? 0;
    if (open >= this.max) return false;
    this.perAddress.set(address, open + 1);
    this.sessions.set(sessionId, address);
    return true;
  }

  release(sessionId: string): void {
    const address = this.sessions.get(sessionId);
    if (address === undefined) return;
    this.sessions.delete(sessionId);
    const open = (this.perAddress.get(address) ?? 1) - 1;
    if (open > 0) this.perAddress.set(address, open);
    else this.perAddress.delete(address);
  }
}
