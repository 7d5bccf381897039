// A node that dies (kill -9) on a shared PostgreSQL database: node A (127.0.0.2) is a child process, node B
// (127.0.0.3) runs in this process on a fake clock. B delivers A's sandbox and default-pool messages once A's
// leases have lapsed; A's address-bound messages (pool-a) wait for A and go out when it starts again.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeClock, type Clock } from '../../src/clock';
import { MASTER_KEY_FILE } from '../../src/crypto/secret-box';
import type { Mta } from '../../src/delivery/mta';
import { ApiClient, createKey, startTestApp } from '../support/app';
import { startDnsServer } from '../support/dns-server';
import { startServer, type ServerProcess } from '../support/cli';
import { startSmtpSink } from '../support/smtp-sink';
import { eventually } from '../support/wait';
import { deliveryConfig, pointMx, SENDER_DOMAIN, verifiedDomain } from '../delivery/world';

const A = { address: '127.0.0.2', hostname: 'out-a.pigeon.test' };
const B = { address: '127.0.0.3', hostname: 'out-b.pigeon.test' };
const LEASE_SECONDS = 30;
const CONCURRENCY = 10;

describe('a node that dies', () => {
  it('leaves its shared work to the other node after the lease, and its own addresses\' work for its restart', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const dns = await startDnsServer();
    pointMx(dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
    const clock = new FakeClock(Date.now());
    const delivery = { leaseSeconds: LEASE_SECONDS, concurrency: CONCURRENCY };
    const b = await startTestApp(deliveryConfig(dns.address, sink.port, { node: { id: 'node-b' }, ips: [B], delivery }), { clock: clock as Clock });
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-node-a-'));
    let serving: ServerProcess | undefined;
    try {
      await verifiedDomain(b, dns, SENDER_DOMAIN); // also makes B's secret.key, which every node shares
      fs.copyFileSync(path.join(b.dataDir, MASTER_KEY_FILE), path.join(dataDir, MASTER_KEY_FILE));
      const configFile = path.join(dataDir, 'config.json');
      fs.writeFileSync(configFile, JSON.stringify({
        ...deliveryConfig(dns.address, sink.port, { node: { id: 'node-a' }, ips: [A], delivery: { ...delivery, allowPrivateTargets: true } }),
        dataDir,
        database: { client: 'postgres', url: b.config.database.url },
        log: { level: 'info' }, // startServer() waits for the "pigeon started" line
        http: { port: 0 },
        smtp: { submission: { port: 0 }, inbound: { port: 0 } },
        metrics: { port: 0 },
        rateLimit: { requestsPerSecond: 100_000, burst: 100_000 },
      }));
      serving = await startServer(configFile);
      const liveKey = await createKey(b, 'live', ['messages:send', 'ip-pools:manage']);
      const onA = new ApiClient(serving.url, liveKey);
      assert.equal((await onA.post('/v1/ip-pools', { name: 'pool-a', ips: [A.address] })).status, 201);

      const send = async (api: ApiClient, to: string[], pool?: string) => {
        const res = await api.post('/v1/messages/send', { from: `app@${SENDER_DOMAIN}`, to, subject: 'Hi', text: 'Hi.', ...(pool ? { ip_pool: pool } : {}) });
        assert.equal(res.status, 202, res.text);
        return (res.body.data as Array<{ id: string }>).map((d) => d.id);
      };
      const batch = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}@dest.test`);
      // The burst through A, then kill -9 at once: some sent, some in flight (leased to A), some queued.
      const sandboxOnA = new ApiClient(serving.url, b.key);
      const accepted = { poolA: [] as string[], shared: [] as string[], sandbox: [] as string[] };
      for (let i = 0; i < 4; i++) {
        accepted.poolA.push(...(await send(onA, batch(`pa${i}-`, 15), 'pool-a')));
        accepted.shared.push(...(await send(onA, batch(`d${i}-`, 15))));
        accepted.sandbox.push(...(await send(sandboxOnA, batch(`s${i}-`, 10))));
      }
      await serving.stop('SIGKILL');
      serving = undefined;
      // While A is down, more for A's pool through B: these can only wait.
      const waiting = await send(b.api.withKey(liveKey), batch('late-', 10), 'pool-a');
      accepted.poolA.push(...waiting);

      const statusOf = async (ids: string[]) => (await b.db('messages').whereIn('id', ids).select('status')).map((r: { status: string }) => r.status);
      const mta = b.workers.find((w) => w.name === 'delivery') as Mta;
      clock.advance((LEASE_SECONDS + 60) * 1000); // past every lease A took (its clock is the real one)
      await eventually(async () => {
        await mta.runOnce();
        return (await statusOf([...accepted.shared, ...accepted.sandbox])).every((s) => s === 'delivered');
      }, 60_000, 'B delivers A\'s sandbox and default-pool messages');
      const poolA = new Set(accepted.poolA.map(String));
      const fromB = sink.messages.filter((m) => m.remoteAddress === B.address).flatMap((m) => m.rcptTo);
      assert.ok(fromB.every((r) => !/^(pa|late-)/.test(r)), 'B sent nothing of pool-a');
      const rows: Array<{ id: string; status: string; lease_owner: string | null }> = await b.db('messages').whereIn('id', [...poolA]).select('id', 'status', 'lease_owner');
      const undelivered = rows.filter((r) => r.status !== 'delivered');
      assert.ok(undelivered.length >= waiting.length, 'pool-a messages wait for A');
      assert.ok(undelivered.every((r) => !r.lease_owner?.startsWith('mta-node-b-')), 'none of them claimed by B');

      serving = await startServer(configFile); // A again, same node.id: it releases its own stale leases and sends
      await eventually(async () => (await statusOf(accepted.poolA)).every((s) => s === 'delivered'), 60_000, 'A delivers pool-a after its restart');
      const received = new Map<string, string[]>();
      for (const m of sink.messages) for (const r of m.rcptTo) received.set(r, [...(received.get(r) ?? []), m.remoteAddress]);
      const live = [...batch('late-', 10), ...[0, 1, 2, 3].flatMap((i) => [...batch(`pa${i}-`, 15), ...batch(`d${i}-`, 15)])];
      assert.deepEqual(live.filter((r) => !received.has(r)), [], 'every accepted live message arrived');
      for (const r of live.filter((x) => /^(pa|late-)/.test(x))) assert.ok(received.get(r)!.every((ip) => ip === A.address), `${r} left from A`);
      const duplicates = [...received.values()].reduce((n, from) => n + from.length - 1, 0);
      assert.ok(duplicates <= CONCURRENCY, `${duplicates} duplicates exceed the ${CONCURRENCY} messages A could have in flight`);
      console.log(`node death: ${live.length} live + ${accepted.sandbox.length} sandbox accepted, ${undelivered.length} of pool-a waited for A, ${duplicates} delivered twice`);
    } finally {
      if (serving) {
        await serving.stop('SIGKILL');
      }
      await b.stop();
      await sink.close();
      await dns.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
