// Two nodes, one PostgreSQL database, as the operator runs them: two `pigeon serve` processes, node A
// sending from 127.0.0.2 and node B from 127.0.0.3, each with a pool of its own address. Sends spread over both
// pools and the shared default pool through both APIs are each delivered once, from an address of their pool;
// when A is killed, B delivers A's sandbox and default-pool messages once their leases lapse, A's pool waits for
// A, and A delivers it when it starts again. Runs on the PostgreSQL pass only (test/postgres).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApiClient } from '../support/app';
import { runCliAsync, startServer, type ServerProcess } from '../support/cli';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { databaseFor, testPostgresAdminUrl } from '../support/postgres';
import { addDomain, publish, verify } from '../domains/helpers';

// Long enough that no copy outlives its lease on a loaded machine (a lapsed lease is claimed again: at-least-once), short
// enough that B takes a dead A's messages soon.
const LEASE_SECONDS = 10;
const CONCURRENCY = 10;
const SOURCE = { a: '127.0.0.2', b: '127.0.0.3' } as const;
type NodeName = keyof typeof SOURCE;

const idOf = (mailFrom: string) => /^b\+(msg_[0-9a-z]{26})-/.exec(mailFrom)?.[1] ?? '';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, done: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what}`);
    await sleep(100);
  }
}

describe('two nodes sharing one PostgreSQL database', () => {
  let root: string;
  let dns: TestDnsServer;
  let sink: SmtpSink;
  const configs = {} as Record<NodeName, string>;
  const nodes = {} as Record<NodeName, ServerProcess>;
  let liveKey: string;
  let sandboxKey: string;

  const writeConfig = (name: NodeName, databaseUrl: string) => {
    const dataDir = path.join(root, name);
    fs.mkdirSync(dataDir, { recursive: true });
    configs[name] = path.join(dataDir, 'config.json');
    fs.writeFileSync(configs[name], JSON.stringify({
      hostname: `${name}.mta.nodes.test`,
      dataDir,
      node: { id: `node-${name}` },
      database: { client: 'postgres', url: databaseUrl },
      log: { level: 'info' },
      http: { port: 0 },
      smtp: { submission: { port: 0 }, inbound: { port: 0 } },
      dns: { servers: [dns.address], timeoutMs: 500 },
      delivery: { port: sink.port, concurrency: CONCURRENCY, allowPrivateTargets: true, leaseSeconds: LEASE_SECONDS },
      metrics: { enabled: false },
      ips: [{ address: SOURCE[name], hostname: `out-${name}.nodes.test` }],
      rateLimit: { requestsPerSecond: 100_000, burst: 100_000 },
    }));
  };
  const api = (name: NodeName, key = liveKey) => new ApiClient(nodes[name].url, key);

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-nodes-'));
    sink = await startSmtpSink({ host: '127.0.0.1' });
    dns = await startDnsServer({ 'dest.test': [{ type: 'MX', data: { preference: 10, exchange: 'mx.dest.test' } }], 'mx.dest.test': [{ type: 'A', data: '127.0.0.1' }] });
    const databaseUrl = databaseFor(await testPostgresAdminUrl(), root);
    writeConfig('a', databaseUrl);
    writeConfig('b', databaseUrl);
    nodes.a = await startServer(configs.a, true);
    sandboxKey = nodes.a.bootstrapKey ?? '';
    // Every node seals and opens DKIM keys with the same secret.key (README "Running several nodes").
    fs.copyFileSync(path.join(root, 'a', 'secret.key'), path.join(root, 'b', 'secret.key'));
    nodes.b = await startServer(configs.b);
    const created = await runCliAsync(['keys', 'create', '--mode', 'live', '--scopes', 'all', '--config', configs.a]);
    assert.equal(created.code, 0, created.stderr);
    liveKey = created.stdout.trim();
    publish(dns, await addDomain(api('a'), 'nodes.test'));
    assert.equal((await verify(api('a'), 'nodes.test')).status, 'verified');
    // A pool names addresses the node that creates it has: each node makes the pool of its own address.
    assert.equal((await api('a').post('/v1/ip-pools', { name: 'pool-a', ips: [SOURCE.a] })).status, 201);
    assert.equal((await api('b').post('/v1/ip-pools', { name: 'pool-b', ips: [SOURCE.b] })).status, 201);
  });

  after(async () => {
    await Promise.all(Object.values(nodes).map((n) => n.stop('SIGKILL')));
    await sink?.close();
    await dns?.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  /** One send of message i through `via`; its pool by i: pool-a, pool-b or the shared default. */
  const poolOf = (i: number) => (['pool-a', 'pool-b', 'default'] as const)[i % 3];
  async function send(via: NodeName, i: number, key = liveKey): Promise<string> {
    const pool = key === liveKey ? { ip_pool: poolOf(i) } : {}; // a sandbox message never leaves: no pool
    const res = await api(via, key).post('/v1/messages/send', { from: 'app@nodes.test', to: [`user${i}@dest.test`], subject: `Message ${i}`, text: `Message ${i}.`, ...pool });
    if (res.status !== 202) throw new Error(`send ${i} via ${via}: ${res.status} ${res.text}`);
    return res.body.data[0].id as string;
  }

  /** Arrivals at the sink by message id: the source address of each copy that arrived. */
  const arrivals = () => {
    const by = new Map<string, string[]>();
    for (const m of sink.messages) by.set(idOf(m.mailFrom), [...(by.get(idOf(m.mailFrom)) ?? []), m.remoteAddress.replace(/^::ffff:/, '')]);
    return by;
  };

  it('1,000 sends over both pools and the default pool through both APIs: each delivered once, from an address of its pool', async () => {
    const pools = new Map<string, ReturnType<typeof poolOf>>();
    let next = 0;
    const client = async (via: NodeName) => {
      while (next < 1000) {
        const i = next++;
        pools.set(await send(via, i), poolOf(i));
      }
    };
    await Promise.all(Array.from({ length: 2 * CONCURRENCY }, (_, k) => client(k % 2 ? 'b' : 'a')));
    await until('every message arrived', () => [...pools.keys()].every((id) => arrivals().has(id)));
    await sleep(LEASE_SECONDS * 1000); // a second copy, if any claim went wrong, has time to arrive
    const got = arrivals();
    for (const [id, pool] of pools) {
      const from = got.get(id) ?? [];
      assert.equal(from.length, 1, `${id} (${pool}) arrived ${from.length} times, from ${from.join(", ")}`);
      if (pool === 'pool-a') assert.equal(from[0], SOURCE.a, `${id} of pool-a left from ${from[0]}`);
      if (pool === 'pool-b') assert.equal(from[0], SOURCE.b, `${id} of pool-b left from ${from[0]}`);
      if (pool === 'default') assert.ok(from[0] === SOURCE.a || from[0] === SOURCE.b, `${id} left from ${from[0]}`);
    }
    const defaults = [...pools].filter(([, p]) => p === 'default').map(([id]) => got.get(id)![0]);
    assert.ok(defaults.includes(SOURCE.a) && defaults.includes(SOURCE.b), 'both nodes delivered some of the shared pool');
  });

  it('kill -9 of node A mid-burst: B delivers A\'s sandbox and default-pool messages after the lease, A\'s pool waits for A, and nothing accepted is lost', async () => {
    sink.messages.length = 0;
    const accepted = new Map<string, { pool: ReturnType<typeof poolOf>; via: NodeName }>();
    const sandbox: string[] = [];
    let killed = false;
    let next = 0;
    const killer = until('deliveries under way', () => sink.messages.length >= 60).then(async () => {
      killed = true;
      await nodes.a.stop('SIGKILL');
    });
    const client = async (via: NodeName) => {
      while (next < 600 && !(killed && via === 'a')) {
        const i = next++;
        try {
          if (i % 10 === 9 && via === 'a') sandbox.push(await send('a', i, sandboxKey));
          else accepted.set(await send(via, i), { pool: poolOf(i), via });
        } catch {
          if (via === 'a' && killed) return; // died under this request: not accepted
          throw new Error(`send ${i} via ${via} failed`);
        }
      }
    };
    await Promise.all(Array.from({ length: 2 * CONCURRENCY }, (_, k) => client(k % 2 ? 'b' : 'a')));
    await killer;
    assert.ok([...accepted.values()].some((m) => m.via === 'a') && sink.messages.length < accepted.size, 'the kill came in the middle of the work');

    // B alone: every message it can send arrives (A's leased ones once their lease lapsed), A's pool does not.
    const canB = [...accepted].filter(([, m]) => m.pool !== 'pool-a').map(([id]) => id);
    await until('B delivered every message it can send', () => canB.every((id) => arrivals().has(id)));
    for (const id of sandbox) {
      await until(`sandbox ${id} delivered by B`, async () => (await api('b', sandboxKey).get(`/v1/messages/${id}`)).body?.status === 'delivered');
    }
    await sleep(2 * LEASE_SECONDS * 1000); // long enough for B to have claimed A's pool, were it wrong
    const waiting = [...accepted].filter(([id, m]) => m.pool === 'pool-a' && !arrivals().has(id)).map(([id]) => id);
    assert.ok(waiting.length > 0, 'some of pool-a was still to send when A died');
    for (const [id, from] of arrivals()) if (accepted.get(id)?.pool === 'pool-a') assert.ok(from.every((f) => f === SOURCE.a), `${id} of pool-a left from ${from}`);
    const asked = await api('b').get(`/v1/messages/${waiting[0]}`);
    assert.ok(['queued', 'deferred', 'sending'].includes(asked.body.status), `a pool-a message waits for A: ${asked.text}`);

    // A again: its pool goes out from its address; nothing accepted is lost; duplicates only of what was in flight.
    nodes.a = await startServer(configs.a);
    await until('A delivered its pool', () => [...accepted.keys()].every((id) => arrivals().has(id)));
    const got = arrivals();
    for (const id of waiting) assert.deepEqual(got.get(id), [SOURCE.a]);
    const twice = [...got].filter(([, from]) => from.length > 1);
    const duplicates = twice.reduce((n, [, from]) => n + from.length - 1, 0);
    const detail = twice.map(([id, from]) => `${id} ${accepted.get(id)?.pool ?? 'sandbox?'} via ${accepted.get(id)?.via} from ${from.join('+')}`).join('; ');
    assert.ok(duplicates <= CONCURRENCY, `${duplicates} duplicates exceed the ${CONCURRENCY} messages A could have in flight: ${detail}`);
  });
});
