/**
 * Who may talk to the inbound listener, and how much: anyone on the Internet
 * can connect, so each remote address is bounded in new connections per
 * minute, concurrent connections and reports per minute, and every report in
 * size (refused at MAIL FROM when its SIZE= says so; the data reader refuses the rest
 * while it streams in). The answers are the SMTP replies to give, or null.
 */
import type { Clock } from '../clock';
import type { Config } from '../config';
import { ClientConnections } from './client-limit';
import { ClientRate } from './client-rate';
import { smtpReply, type SmtpReply } from './replies';

export class InboundGuard {
  private readonly open: ClientConnections;
  private readonly connectionRate: ClientRate;
  private readonly reportRate: ClientRate;

  constructor(clock: Clock, private readonly cfg: Config['smtp']['inbound']) {
    this.open = new ClientConnections(cfg.maxConnectionsPerClient);
    this.connectionRate = new ClientRate(clock, cfg.connectionsPerMinutePerClient);
    this.reportRate = new ClientRate(clock, cfg.messagesPerMinutePerClient);
  }

  tooLarge(): SmtpReply {
    return smtpReply(552, '5.3.4', `Message exceeds the maximum size of ${this.cfg.maxMessageBytes} bytes`);
  }

  /** A new connection: within the per-minute rate and the concurrent cap of its address. */
  admitConnection(sessionId: string, address: string): SmtpReply | null {
    if (!this.connectionRate.take(address)) {
      const wait = this.connectionRate.retryAfterSeconds(address);
      return smtpReply(421, '4.7.0', `Too many connections from ${address} this minute; try again in ${wait} s`);
    }
    if (this.open.admit(sessionId, address)) return null;
    return smtpReply(421, '4.7.0', `Too many connections from ${address}; try again later`);
  }

  /** A MAIL FROM, i.e. one more report: its declared size, then the per-minute rate of its address. */
  admitReport(address: string, declaredSize: string | undefined): SmtpReply | null {
    if (Number(declaredSize) > this.cfg.maxMessageBytes) return this.tooLarge();
    if (this.reportRate.take(address)) return null;
    const wait = this.reportRate.retryAfterSeconds(address);
    return smtpReply(450, '4.7.1', `Too many reports from ${address} this minute; try again in ${wait} s`);
  }

  closed(sessionId: string): void {
    this.open.release(sessionId);
  }
}
