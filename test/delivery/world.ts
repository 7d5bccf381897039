/*
 * A small world for delivery tests: the appliance (fake clock unless told
 * otherwise), a test DNS server it resolves through, one or more SMTP sinks
 * standing in for recipient MX hosts, and a DKIM key published in that DNS.
 * Messages are sent through POST /v1/messages/send, with a live key or the
 * sandbox key.
 */
import crypto from 'node:crypto';
import { FakeClock, type Clock } from '../../src/clock';
import type { ConfigInput } from '../../src/config';
import type { Mta } from '../../src/delivery/mta';
import type { SigningKey } from '../../src/delivery/dkim';
import { dkimTxtRecord } from '../support/mail';
import { createKey, startTestApp, type ApiClient, type TestApp } from '../support/app';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { mergeDeep } from '../support/merge';
import { addDomain, publish, verify } from '../domains/helpers';

export const SENDER_DOMAIN = 'sender.test';

export interface World {
  app: TestApp;
  dns: TestDnsServer;
  clock: FakeClock;
  mta: Mta;
  accountId: string;
  /** DKIM selector of the sending domain's active key */
  selector: string;
  /** API client with a live key (the app's own `api` has the sandbox key) */
  live: ApiClient;
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
  const selector = await verifiedDomain(app, dns, SENDER_DOMAIN);
  const live = app.api.withKey(await createKey(app, 'live', ['messages:send', 'messages:read']));
  const account = await app.db('accounts').first('id');
  return {
    app,
    dns,
    clock,
    mta,
    accountId: account.id,
    selector,
    live,
    async stop() {
      await app.stop();
      if (!opts.dns) await dns.close();
    },
  };
}

/** Adds the domain through the API, publishes its records in the test DNS and verifies it; returns its DKIM selector. */
export async function verifiedDomain(app: TestApp, dns: TestDnsServer, domain: string): Promise<string> {
  const added = await addDomain(app.api, domain);
  publish(dns, added);
  const verified = await verify(app.api, domain);
  if (verified.status !== 'verified') throw new Error(`${domain} did not verify: ${JSON.stringify(verified.dns_records)}`);
  return verified.dkim?.selector ?? '';
}

/** MX records pointing a domain at loopback hosts (name → address). */
export function pointMx(dns: TestDnsServer, domain: string, hosts: Array<{ name: string; address: string; priority?: number }>): void {
  dns.set(domain, hosts.map((h, i) => ({ type: 'MX' as const, data: { preference: h.priority ?? 10 * (i + 1), exchange: h.name } })));
  for (const h of hosts) dns.set(h.name, [{ type: 'A', data: h.address }]);
}

export interface NewMessage {
  to: string | string[];
  from?: string;
  /** test: the bootstrap sandbox key; live (default): a live key */
  mode?: 'test' | 'live';
  ipPool?: string;
  subject?: string;
  body?: string;
  sendAt?: number;
}

/** Sends through POST /v1/messages/send and returns the message ids, one per recipient. */
export async function sendBatch(world: World, m: NewMessage): Promise<string[]> {
  const api = m.mode === 'test' ? world.app.api : world.live;
  const res = await api.post('/v1/messages/send', {
    from: m.from ?? `App <app@${SENDER_DOMAIN}>`,
    to: Array.isArray(m.to) ? m.to : [m.to],
    subject: m.subject ?? 'Hello',
    text: m.body ?? 'A test message.',
    ...(m.ipPool ? { ip_pool: m.ipPool } : {}),
    ...(m.sendAt ? { send_at: new Date(m.sendAt).toISOString() } : {}),
  });
  if (res.status !== 202) throw new Error(`send failed: ${res.status} ${res.text}`);
  return (res.body.data as Array<{ id: string }>).map((d) => d.id);
}

/** Sends one message (one recipient) and returns its id. */
export async function sendMessage(world: World, m: NewMessage & { to: string }): Promise<string> {
  return (await sendBatch(world, m))[0];
}

/** Statements run on the app's writer connection while `work` runs (BEGIN and COMMIT included). */
export async function statementsDuring(world: World, work: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const count = (q: { sql: string }) => seen.push(q.sql);
  world.app.db.on('query', count);
  try {
    await work();
  } finally {
    world.app.db.off('query', count);
  }
  return seen;
}

/**
 * Keeps the running MTA from taking new sends by itself, for tests that claim rows by hand: no wake-up
 * signal, and no copies handed over in memory at accept (delivery/handoff.ts).
 */
export function holdQueue(world: World): void {
  world.app.deps.signals.emit = () => {};
  world.app.deps.handoff.attach({ reserve: async () => null });
}

export async function messageRow(world: World, id: string) {
  return world.app.db('messages').where({ id }).first();
}

export async function attemptsOf(world: World, id: string) {
  return world.app.db('message_attempts').where({ message_id: id }).orderBy('id');
}

/** The events the MTA recorded for a message, oldest first (message.queued, the accept path's, left out). */
export async function eventsOf(world: World, id: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  const rows = await world.app.db('events').where({ message_id: id }).whereNot({ type: 'message.queued' }).orderBy('created_at').orderBy('id');
  return rows.map((r: { type: string; data: string }) => ({ type: r.type, data: JSON.parse(r.data) }));
}

/** A DKIM key published in the test DNS, for tests that inject signing keys into the MTA directly. */
export function publishDkimKey(dns: TestDnsServer, domain: string, selector = 'pgtest'): SigningKey {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  dns.set(`${selector}._domainkey.${domain}`, [{ type: 'TXT', data: dkimTxtRecord(publicKey) }]);
  return { domain, selector, algorithm: 'rsa', privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}
