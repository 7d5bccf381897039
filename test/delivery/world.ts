/*
 * A small world for delivery tests: the appliance (fake clock unless told
 * otherwise), a test DNS server it resolves through, one or more SMTP sinks
 * standing in for recipient MX hosts, and a DKIM key published in that DNS.
 * `insertMessage` writes accepted messages the way the messages module does
 * (content + one row per recipient, then the queueChanged signal).
 */
import crypto from 'node:crypto';
import { FakeClock, type Clock } from '../../src/clock';
import type { ConfigInput } from '../../src/config';
import { newId } from '../../src/ids';
import type { Mta } from '../../src/delivery/mta';
import type { SigningKey } from '../../src/delivery/dkim';
import { startTestApp, type TestApp } from '../support/app';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { dkimTxtRecord } from '../support/mail';
import { mergeDeep } from '../support/merge';

export const SENDER_DOMAIN = 'sender.test';
export const SELECTOR = 'pigeon1';

export interface World {
  app: TestApp;
  dns: TestDnsServer;
  clock: FakeClock;
  mta: Mta;
  accountId: string;
  key: SigningKey;
  stop(): Promise<void>;
}

/** Timeouts short enough for tests that provoke them. */
export function deliveryConfig(dnsAddress: string, port: number, overrides: ConfigInput = {}): ConfigInput {
  const base: ConfigInput = {
    hostname: 'mta.pigeon.test',
    dns: { servers: [dnsAddress], timeoutMs: 500 },
    delivery: { port, connectTimeoutMs: 2000, greetingTimeoutMs: 2000, commandTimeoutMs: 2000, dataTimeoutMs: 2000, idleConnectionMs: 1000 },
    ips: [{ address: '127.0.0.1', hostname: 'out1.pigeon.test' }],
  };
  return mergeDeep(base, overrides) as ConfigInput;
}

export async function startWorld(opts: { port: number; config?: ConfigInput; clock?: FakeClock; dns?: TestDnsServer }): Promise<World> {
  const dns = opts.dns ?? (await startDnsServer());
  const clock = opts.clock ?? new FakeClock(Date.now());
  const app = await startTestApp(deliveryConfig(dns.address, opts.port, opts.config), { clock: clock as Clock });
  const mta = app.workers.find((w) => w.name === 'delivery') as Mta;
  const key = publishDkimKey(dns, SENDER_DOMAIN);
  mta.hooks.signingKeys = async (_account, domain) => (domain === SENDER_DOMAIN ? key : null);
  const account = await app.db('accounts').first('id');
  return {
    app,
    dns,
    clock,
    mta,
    accountId: account.id,
    key,
    async stop() {
      await app.stop();
      if (!opts.dns) await dns.close();
    },
  };
}

/** An RSA-2048 key for domain, its public half published at <selector>._domainkey.<domain>. */
export function publishDkimKey(dns: TestDnsServer, domain: string, selector = SELECTOR): SigningKey {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  dns.set(`${selector}._domainkey.${domain}`, [{ type: 'TXT', data: dkimTxtRecord(publicKey) }]);
  return { domain, selector, algorithm: 'rsa', privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}

/** MX records pointing a domain at loopback hosts (name → address). */
export function pointMx(dns: TestDnsServer, domain: string, hosts: Array<{ name: string; address: string; priority?: number }>): void {
  dns.set(domain, hosts.map((h, i) => ({ type: 'MX' as const, data: { preference: h.priority ?? 10 * (i + 1), exchange: h.name } })));
  for (const h of hosts) dns.set(h.name, [{ type: 'A', data: h.address }]);
}

export interface NewMessage {
  to: string;
  from?: string;
  mode?: 'test' | 'live';
  ipPool?: string;
  subject?: string;
  body?: string;
  sendAt?: number;
  /** share one content row between several recipients */
  contentId?: string;
}

export function rawMessage(m: { from: string; to: string; subject: string; body: string; messageId: string }): Buffer {
  return Buffer.from(
    [
      `From: Sender <${m.from}>`,
      `To: <${m.to}>`,
      `Subject: ${m.subject}`,
      `Message-ID: <${m.messageId}>`,
      'Date: Mon, 05 Jan 2026 09:00:00 +0000',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 7bit',
      '',
      m.body,
      '',
    ].join('\r\n'),
  );
}

/** Writes an accepted message as the accept path does, and wakes the MTA. Returns its id. */
export async function insertMessage(world: World, m: NewMessage): Promise<string> {
  const now = world.clock.now();
  const id = newId('msg');
  const from = m.from ?? `app@${SENDER_DOMAIN}`;
  const headerId = `${id}@mta.pigeon.test`;
  let contentId = m.contentId;
  if (!contentId) {
    contentId = newId('cnt');
    const raw = rawMessage({ from, to: m.to, subject: m.subject ?? 'Hello', body: m.body ?? 'A test message.', messageId: headerId });
    await world.app.db('message_contents').insert({ id: contentId, raw, size: raw.length, signed: false, created_at: now });
  }
  await world.app.db('messages').insert({
    id,
    account_id: world.accountId,
    mode: m.mode ?? 'live',
    status: m.sendAt ? 'scheduled' : 'queued',
    batch_id: newId('bat'),
    content_id: contentId,
    from_email: from,
    to_email: m.to,
    recipient_domain: m.to.split('@')[1],
    sending_domain: from.split('@')[1],
    domain_verified: true,
    ip_pool: m.ipPool ?? null,
    message_id_header: headerId,
    source: 'api',
    send_at: m.sendAt ?? null,
    next_attempt_at: m.sendAt ?? now,
    created_at: now,
    updated_at: now,
  });
  world.app.deps.signals.emit('queueChanged');
  return id;
}

export async function messageRow(world: World, id: string) {
  return world.app.db('messages').where({ id }).first();
}

export async function attemptsOf(world: World, id: string) {
  return world.app.db('message_attempts').where({ message_id: id }).orderBy('id');
}

export async function eventsOf(world: World, id: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  const rows = await world.app.db('events').where({ message_id: id }).orderBy('created_at').orderBy('id');
  return rows.map((r: { type: string; data: string }) => ({ type: r.type, data: JSON.parse(r.data) }));
}
