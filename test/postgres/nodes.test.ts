// Two nodes, one PostgreSQL database (in one test process): node A has source address 127.0.0.2, node B
// 127.0.0.3. Each claims only what it can send, and the background work runs on one elected node.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock, type Clock } from '../../src/clock';
import type { ConfigInput } from '../../src/config';
import type { Leader } from '../../src/db/leader';
import type { Mta } from '../../src/delivery/mta';
import { startWarmupOn } from '../../src/pools/warmup';
import { createKey, startTestApp, type ApiClient, type TestApp } from '../support/app';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';
import { eventually } from '../support/wait';
import { deliveryConfig, pointMx, SENDER_DOMAIN, verifiedDomain } from '../delivery/world';

const A = { address: '127.0.0.2', hostname: 'out-a.pigeon.test' };
const B = { address: '127.0.0.3', hostname: 'out-b.pigeon.test' };

interface Node {
  app: TestApp;
  mta: Mta;
  leader: Leader;
  live: ApiClient;
}

const worker = <T>(app: TestApp, name: string) => app.workers.find((w) => w.name === name) as T;

describe('two nodes on one PostgreSQL database', () => {
  let dns: TestDnsServer;
  let sink: SmtpSink;
  let nodes: Node[] = [];
  let clock: FakeClock;

  before(async () => {
    sink = await startSmtpSink({ host: '127.0.0.1' });
    dns = await startDnsServer();
    pointMx(dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
  });
  after(async () => {
    await Promise.all([sink.close(), dns.close()]);
  });
  afterEach(async () => {
    for (const n of nodes.reverse()) await n.app.stop();
    nodes = [];
    sink.messages.length = 0;
  });

  async function startNode(id: string, ip: typeof A, first?: TestApp, extra: ConfigInput = {}): Promise<Node> {
    const config = deliveryConfig(dns.address, sink.port, { node: { id, electionRetryMs: 200 }, ips: [ip], ...extra });
    const app = await startTestApp(config, { clock: clock as Clock, sameDatabaseAs: first });
    const live = app.api.withKey(await createKey(app, 'live', ['messages:send', 'messages:read', 'ip-pools:manage', 'webhooks:manage']));
    const node = { app, mta: worker<Mta>(app, 'delivery'), leader: worker<Leader>(app, 'leader'), live };
    nodes.push(node);
    return node;
  }

  /** Node A (first: it creates the database), node B on the same one; a verified sending domain; pool-a on A, pool-b on B. */
  async function twoNodes(extra: ConfigInput = {}, now = Date.now()): Promise<[Node, Node]> {
    clock = new FakeClock(now);
    const a = await startNode('node-a', A, undefined, extra);
    const b = await startNode('node-b', B, a.app, extra);
    await verifiedDomain(a.app, dns, SENDER_DOMAIN);
    assert.equal((await a.live.post('/v1/ip-pools', { name: 'pool-a', ips: [A.address] })).status, 201);
    // A knows only its own addresses, so B's pool is made through B.
    assert.equal((await b.live.post('/v1/ip-pools', { name: 'pool-b', ips: [B.address] })).status, 201);
    return [a, b];
  }

  async function send(api: ApiClient, to: string[], extra: Record<string, unknown> = {}): Promise<string[]> {
    const res = await api.post('/v1/messages/send', { from: `App <app@${SENDER_DOMAIN}>`, to, subject: 'Hello', text: 'Hi.', ...extra });
    assert.equal(res.status, 202, res.text);
    return (res.body.data as Array<{ id: string }>).map((d) => d.id);
  }

  /** Both MTAs look at the queue until every message has left it (B finds A's rows by its poll: runOnce). */
  async function drain(a: Node, ids: string[]): Promise<void> {
    await eventually(async () => {
      await Promise.all(nodes.map((n) => n.mta.runOnce()));
      const open = await a.app.db('messages').whereIn('id', ids).whereNot('status', 'delivered').count({ n: '*' }).first();
      return Number(open?.n) === 0;
    }, 120_000, 'every message delivered');
  }

  /** Recipient → source addresses it was received from (one entry per copy received). */
  function receivedFrom(): Map<string, string[]> {
    const seen = new Map<string, string[]>();
    for (const m of sink.messages) for (const rcpt of m.rcptTo) seen.set(rcpt, [...(seen.get(rcpt) ?? []), m.remoteAddress]);
    return seen;
  }

  it('delivers every message once, from an address of its pool, whichever node accepted it', async () => {
    const [a, b] = await twoNodes();
    const expected = new Map<string, string[]>(); // recipient → addresses it may come from
    const ids: string[] = [];
    const pools = { 'pool-a': [A.address], 'pool-b': [B.address], default: [A.address, B.address] };
    for (const [n, node] of [a, b].entries()) {
      for (const [pool, from] of Object.entries(pools)) {
        for (let batch = 0; batch < 2; batch++) {
          const to = Array.from({ length: 25 }, (_, i) => `n${n}-${pool}-${batch}-${i}@dest.test`);
          ids.push(...(await send(node.live, to, pool === 'default' ? {} : { ip_pool: pool })));
          for (const r of to) expected.set(r, from);
        }
      }
    }
    const sandbox = [...(await send(a.app.api, Array.from({ length: 20 }, (_, i) => `sa${i}@dest.test`))), ...(await send(b.app.api, Array.from({ length: 20 }, (_, i) => `sb${i}@dest.test`)))];
    await drain(a, [...ids, ...sandbox]);

    const got = receivedFrom();
    assert.equal(ids.length, 300);
    assert.equal(got.size, expected.size, 'every live recipient, and no sandbox one, reached the MX');
    for (const [rcpt, from] of got) {
      assert.equal(from.length, 1, `${rcpt} received once`);
      assert.ok(expected.get(rcpt)?.includes(from[0]), `${rcpt} came from ${from[0]}, an address of its pool`);
    }
    // A message accepted on A for B's pool was sent by B (and the reverse).
    assert.deepEqual(got.get('n0-pool-b-0-0@dest.test'), [B.address]);
    assert.deepEqual(got.get('n1-pool-a-0-0@dest.test'), [A.address]);
    const attempts: Array<{ message_id: string; n: number }> = await a.app.db('message_attempts').whereIn('message_id', ids).groupBy('message_id').select('message_id').count({ n: '*' });
    assert.ok(attempts.length === ids.length && attempts.every((r) => Number(r.n) === 1), 'one attempt per live message');
    const delivered: Array<{ message_id: string; n: number }> = await a.app.db('events').whereIn('message_id', sandbox).where({ type: 'message.delivered' })
      .groupBy('message_id').select('message_id').count({ n: '*' });
    assert.ok(delivered.length === sandbox.length && delivered.every((r) => Number(r.n) === 1), 'each sandbox message delivered once');
  });

  it('a node does not take a fresh send of a pool it has no address of: it waits for the other node', async () => {
    const [a, b] = await twoNodes();
    await b.mta.stop();
    const [id] = await send(a.live, ['only-b@dest.test'], { ip_pool: 'pool-b' });
    await a.mta.runOnce();
    const row = await a.app.db('messages').where({ id }).first();
    assert.equal(row.status, 'queued', 'A neither took it in memory nor claimed it');
    assert.equal(row.lease_owner, null);
    assert.equal(sink.messages.length, 0);
  });

  it('scheduled sends and webhook deliveries happen once with two nodes', async () => {
    const [a, b] = await twoNodes();
    const receiver: WebhookReceiver = await startWebhookReceiver();
    try {
      // A sandbox webhook: sandbox messages are delivered by the simulator on whichever node claims them. Every
      // send is scheduled, so no lease is held while the fake clock jumps (a lapsed lease is claimed again).
      assert.equal((await a.app.api.post('/v1/webhooks', { url: receiver.url, events: ['message.delivered'] })).status, 201);
      const later = clock.now() + 3_600_000;
      const live = [...(await send(a.live, Array.from({ length: 20 }, (_, i) => `sched-a${i}@dest.test`), { send_at: new Date(later).toISOString() })),
        ...(await send(b.live, Array.from({ length: 20 }, (_, i) => `sched-b${i}@dest.test`), { send_at: new Date(later).toISOString() }))];
      const sandbox = [...(await send(a.app.api, Array.from({ length: 15 }, (_, i) => `hook-a${i}@dest.test`), { send_at: new Date(later).toISOString() })),
        ...(await send(b.app.api, Array.from({ length: 15 }, (_, i) => `hook-b${i}@dest.test`), { send_at: new Date(later).toISOString() }))];
      await Promise.all(nodes.map((n) => n.mta.runOnce()));
      assert.equal(sink.messages.length, 0, 'nothing scheduled goes before its time');
      clock.advance(3_600_000 + 1000);
      await drain(a, [...live, ...sandbox]);
      const got = receivedFrom();
      assert.equal(got.size, live.length);
      for (const [rcpt, from] of got) assert.equal(from.length, 1, `${rcpt} received once`);

      await eventually(async () => {
        await Promise.all(nodes.map((n) => worker<{ runOnce(): Promise<void> }>(n.app, 'webhooks').runOnce()));
        return receiver.requests.length >= sandbox.length;
      }, 60_000, 'a webhook request per sandbox delivery');
      await Promise.all(nodes.map((n) => worker<{ runOnce(): Promise<void> }>(n.app, 'webhooks').runOnce()));
      const perMessage = new Map<string, number>();
      for (const r of receiver.requests) {
        const id = (r.json() as { data: { message_id: string } }).data.message_id;
        perMessage.set(id, (perMessage.get(id) ?? 0) + 1);
      }
      assert.deepEqual([...perMessage.keys()].sort(), [...sandbox].sort());
      assert.ok([...perMessage.values()].every((n) => n === 1), 'each event delivered to the webhook once');
    } finally {
      await receiver.close();
    }
  });

  it('elects one node for background work; when it closes the other takes over', async () => {
    const [a, b] = await twoNodes();
    await eventually(async () => a.leader.leading || b.leader.leading, 30_000, 'a node elected');
    assert.notEqual(a.leader.leading, b.leader.leading, 'exactly one node leads');
    const [first, second] = a.leader.leading ? [a, b] : [b, a];

    // Domain re-check: due on both nodes' clocks, done by the leader only.
    const domain = await a.app.db('domains').where({ name: SENDER_DOMAIN }).first();
    clock.advance(25 * 3_600_000);
    await Promise.all([a, b].map((n) => worker<{ runOnce(): Promise<void> }>(n.app, 'domains-recheck').runOnce()));
    const checked = await a.app.db('domains').where({ id: domain.id }).first();
    assert.notDeepEqual(checked, domain, 'the leader re-checked the domain');
    const again = await a.app.db('domains').where({ id: domain.id }).first();
    await worker<{ runOnce(): Promise<void> }>(second.app, 'domains-recheck').runOnce();
    assert.deepEqual(await a.app.db('domains').where({ id: domain.id }).first(), again, 'the other node does not');

    await first.app.stop();
    nodes = nodes.filter((n) => n !== first);
    await eventually(async () => second.leader.leading, 30_000, 'the other node elected after the leader closed');
    clock.advance(25 * 3_600_000);
    await worker<{ runOnce(): Promise<void> }>(second.app, 'domains-recheck').runOnce();
    assert.notDeepEqual(await second.app.db('domains').where({ id: domain.id }).first(), again, 'the new leader re-checks');
  });

  it('the TLS report goes out once, from the leader, and not again from the node that takes over', async () => {
    clock = new FakeClock(Date.now());
    const tls = { delivery: { tlsReports: { enabled: true } } };
    const a = await startNode('node-a', A, undefined, tls);
    const day = new Date(clock.now() - 86_400_000).toISOString().slice(0, 10);
    dns.set('_smtp._tls.dest.test', [{ type: 'TXT', data: 'v=TLSRPTv1; rua=mailto:tlsrpt@dest.test' }]);
    const counts = () => a.app.db('tls_report_counts').where({ day });
    await a.app.db('tls_report_counts').insert({ day, policy_domain: 'dest.test', policy_type: 'no-policy-found', result: 'success', sending_ip: A.address, receiving_mx: 'mx.dest.test', sessions: 3 });
    const b = await startNode('node-b', B, a.app, tls);
    const reports = () => sink.messages.filter((m) => m.rcptTo.includes('tlsrpt@dest.test'));
    // Whichever node leads reports (its start-up run may have come before the counts did); the other's is a no-op.
    await Promise.all([a, b].map((n) => worker<{ runOnce(): Promise<void> }>(n.app, 'tls-reports').runOnce()));
    await eventually(async () => reports().length > 0 && (await counts()).length === 0, 30_000, 'the report sent and its counts removed');
    await Promise.all([a, b].map((n) => worker<{ runOnce(): Promise<void> }>(n.app, 'tls-reports').runOnce()));
    const leader = a.leader.leading ? a : b;
    const other = leader === a ? b : a;
    await leader.app.stop();
    nodes = nodes.filter((n) => n !== leader);
    await eventually(async () => other.leader.leading, 30_000, 'the other node elected');
    await worker<{ runOnce(): Promise<void> }>(other.app, 'tls-reports').runOnce();
    assert.equal(reports().length, 1, 'one report');
    assert.equal(reports()[0].remoteAddress, leader === a ? A.address : B.address, 'sent by the leader');
  });

  it('a warm-up rolls over once a day, on the node that has the address', async () => {
    // 23:00 UTC: nearly all of a day's cap is open (it is spread over the hours); 6 sends are over half of 10.
    const [a, b] = await twoNodes({}, Date.UTC(2026, 2, 2, 23));
    await startWarmupOn(a.app.deps, [A.address], [10, 20, 40]);
    const to = (day: number) => Array.from({ length: 3 }, (_, i) => `w${day}-${i}@dest.test`);
    const ids = [...(await send(a.live, to(1), { ip_pool: 'pool-a' })), ...(await send(b.live, to(1).map((r) => `b${r}`), { ip_pool: 'pool-a' }))];
    await drain(a, ids);
    clock.advance(86_400_000);
    const next = [...(await send(a.live, to(2), { ip_pool: 'pool-a' })), ...(await send(b.live, to(2).map((r) => `b${r}`), { ip_pool: 'pool-a' }))];
    await drain(a, next);
    const warmup = await a.app.db('ip_warmups').where({ address: A.address }).first();
    assert.equal(Number(warmup.day_index), 1, 'day 2 of the schedule: rolled once');
    const usage: Array<{ sent: number }> = await a.app.db('ip_daily_usage').where({ address: A.address });
    assert.equal(usage.reduce((s, r) => s + Number(r.sent), 0), 12, 'every send counted once');
    assert.ok(sink.messages.every((m) => m.remoteAddress === A.address));
  });
});
