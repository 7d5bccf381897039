/** Shared by the pools tests: sending addresses on loopback and a queued message written as the accept path does. */
import { newId } from '../../src/ids';
import type { Db } from '../../src/db';
import { createKey, type ApiClient, type TestApp } from '../support/app';

/** 127.0.0.2 and 127.0.0.3 are loopback on Linux, so delivery tests can bind to them. */
export const IPS = [
  { address: '127.0.0.2', hostname: 'out2.pigeon.test' },
  { address: '127.0.0.3', hostname: 'out3.pigeon.test' },
];

/** A client with a live ip-pools:manage key of the default account (pool writes need a live key). */
export async function liveClient(app: TestApp): Promise<ApiClient> {
  return app.api.withKey(await createKey(app, 'live', ['ip-pools:manage']));
}

export interface PoolIp {
  address: string;
  hostname: string | null;
  weight: number;
  family: string;
  configured: boolean;
  warmup: {
    status: string;
    schedule: string | null;
    day: number | null;
    days: number | null;
    today_cap: number | null;
    allowed_by_now: number | null;
    provider_caps: Record<string, number> | null;
    started_at: string | null;
    paused_at: string | null;
    finished_at: string | null;
    finished_reason: string | null;
  };
  usage_today: { date: string; total: number; by_provider: Record<string, number> };
  throttles: Array<{ destination: string; reason: string; level: number; rate_per_minute: number; max_in_flight: number; until: string; last_reply: string; replies: number }>;
}

export interface PoolBody {
  id: string;
  name: string;
  default: boolean;
  created_at: string | null;
  overflow: string;
  ips: PoolIp[];
}

export const ipOf = (pool: PoolBody, address: string): PoolIp => {
  const ip = pool.ips.find((i) => i.address === address);
  if (!ip) throw new Error(`${address} not in pool ${pool.name}: ${JSON.stringify(pool.ips.map((i) => i.address))}`);
  return ip;
};

/** A queued (or scheduled) live message naming a pool, as the accept path writes it. */
export async function insertQueued(db: Db, accountId: string, ipPool: string | null, opts: { to?: string; now: number; sendAt?: number }): Promise<string> {
  const id = newId('msg');
  const contentId = newId('cnt');
  const raw = Buffer.from(`From: a@sender.test\r\nTo: ${opts.to ?? 'x@dest.test'}\r\nSubject: hi\r\nMessage-ID: <${id}@pigeon.test>\r\n\r\nhello\r\n`);
  await db('message_contents').insert({ id: contentId, raw, size: raw.length, signed: false, created_at: opts.now });
  const to = opts.to ?? 'x@dest.test';
  await db('messages').insert({
    id,
    account_id: accountId,
    mode: 'live',
    status: opts.sendAt ? 'scheduled' : 'queued',
    batch_id: newId('bat'),
    content_id: contentId,
    from_email: 'a@sender.test',
    to_email: to,
    recipient_domain: to.split('@')[1],
    sending_domain: 'sender.test',
    domain_verified: true,
    ip_pool: ipPool,
    message_id_header: `${id}@pigeon.test`,
    source: 'api',
    send_at: opts.sendAt ?? null,
    next_attempt_at: opts.sendAt ?? opts.now,
    created_at: opts.now,
    updated_at: opts.now,
  });
  return id;
}
