/**
 * The whole way for the SMTP tests: the appliance with a fake clock, a
 * loopback DNS server it resolves through, an SMTP sink standing in for the
 * recipients' MX (dest.test), a DKIM key for sender.test published in that
 * DNS and handed to the MTA, sender.test verified, and a live key that may
 * send.
 */
import { FakeClock, type Clock } from '../../src/clock';
import type { Mta } from '../../src/delivery/mta';
import { createKey } from '../support/app';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { pointMx, publishDkimKey } from '../delivery/world';
import { addVerifiedDomain, startSmtpApp, type SmtpApp } from './helpers';

export const SENDER_DOMAIN = 'sender.test';

export interface RelayWorld {
  app: SmtpApp;
  dns: TestDnsServer;
  sink: SmtpSink;
  clock: FakeClock;
  mta: Mta;
  liveKey: string;
  testKey: string;
  stop(): Promise<void>;
}

/** `inbound` overrides other smtp.inbound settings (e.g. a higher report rate for replay tests). */
/** `relayListener` also starts the port-25 style relay-by-network listener (on port 0). */
export async function startRelayWorld(extra: { feedbackAddress?: string; inbound?: Record<string, number>; relayListener?: boolean } = {}): Promise<RelayWorld> {
  const dns = await startDnsServer();
  const sink = await startSmtpSink({ host: '127.0.0.1' });
  const clock = new FakeClock(Date.UTC(2026, 0, 5, 9, 0, 0));
  const app = await startSmtpApp({
    dns: { servers: [dns.address], timeoutMs: 500 },
    delivery: { port: sink.port, connectTimeoutMs: 2000, greetingTimeoutMs: 2000, commandTimeoutMs: 2000, dataTimeoutMs: 2000 },
    ips: [{ address: '127.0.0.1', hostname: 'out1.pigeon.test' }],
    smtp: { inbound: { feedbackAddress: extra.feedbackAddress ?? '', ...extra.inbound }, relay: { enabled: extra.relayListener ?? false, port: 0 } },
  }, clock as Clock);
  const mta = app.workers.find((w) => w.name === 'delivery') as Mta;
  const key = publishDkimKey(dns, SENDER_DOMAIN);
  mta.hooks.signingKeys = async (_account, domain) => (domain === SENDER_DOMAIN ? key : null);
  pointMx(dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
  await addVerifiedDomain(app, SENDER_DOMAIN);
  return {
    app, dns, sink, clock, mta,
    liveKey: await createKey(app, 'live', ['messages:send']),
    testKey: await createKey(app, 'test', ['messages:send']),
    async stop() {
      await app.stop();
      await sink.close();
      await dns.close();
    },
  };
}

export async function eventsOf(app: SmtpApp, id: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  const rows = await app.db('events').where({ message_id: id }).orderBy('created_at').orderBy('id');
  return rows.map((r: { type: string; data: string }) => ({ type: r.type, data: JSON.parse(r.data) }));
}
