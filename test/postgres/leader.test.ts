// The election for background work (src/db/leader.ts) when the leader's connection stops answering: a
// partition between the leader and the database. The leader reaches the server through a TCP relay on
// loopback that stops passing bytes (the sockets stay open, as in a partition); the server then drops the
// leader's session, so its advisory lock is free and another node takes it. The old leader must stop its
// singletons at its next check, not keep running them beside the new leader.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import knex from 'knex';
import { parseConfig } from '../../src/config';
import type { AppDeps } from '../../src/deps';
import { Leader } from '../../src/db/leader';
import { createLogger } from '../../src/logger';
import type { Worker } from '../../src/modules';
import { databaseFor, testPostgresAdminUrl } from '../support/postgres';
import { eventually } from '../support/wait';

/** A loopback TCP relay to `target` that can go silent: `freeze()` drops every byte and every close from then on. */
async function startRelay(target: URL): Promise<{ url(dbUrl: string): string; freeze(): void; close(): void }> {
  let frozen = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      sockets.add(from);
      from.on('data', (chunk) => void (frozen || to.write(chunk)));
      from.on('error', () => undefined);
      from.on('close', () => void (frozen || to.destroy()));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url(dbUrl) {
      const u = new URL(dbUrl);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    freeze: () => void (frozen = true),
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** A singleton's worker that says whether it runs. */
function probe(state: { running: number }): () => Worker {
  return () => ({
    name: 'probe',
    start: () => void state.running++,
    stop: async () => void state.running--,
  });
}

describe('background-work election on PostgreSQL', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  after(async () => {
    for (const fn of cleanup.reverse()) await fn();
  });

  it('a leader whose connection goes silent stops its singletons at its next check, and another node leads', async () => {
    const adminUrl = await testPostgresAdminUrl();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-leader-'));
    cleanup.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const dbUrl = databaseFor(adminUrl, dataDir);
    const relay = await startRelay(new URL(dbUrl));
    cleanup.push(() => relay.close());
    const admin = knex({ client: 'pg', connection: dbUrl });
    cleanup.push(() => admin.destroy());

    const nodeDeps = (id: string, url: string): AppDeps => {
      const config = parseConfig({ dataDir, database: { client: 'postgres', url }, node: { id, electionRetryMs: 200 } });
      return { config, db: admin, log: createLogger('silent') } as unknown as AppDeps;
    };
    const a = new Leader(nodeDeps('a', relay.url(dbUrl)));
    const b = new Leader(nodeDeps('b', dbUrl));
    const onA = { running: 0 };
    const onB = { running: 0 };
    a.singleton(probe(onA)).start();
    b.singleton(probe(onB)).start();
    a.start();
    cleanup.push(() => a.stop());
    await eventually(async () => a.leading, 30_000, 'node a elected');
    b.start();
    cleanup.push(() => b.stop());
    assert.equal(onA.running, 1, 'the leader runs its singleton');

    relay.freeze();
    await admin.raw("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pigeon-leader-a'");
    await eventually(async () => b.leading, 30_000, 'node b elected once the server dropped a\'s session');
    assert.equal(onB.running, 1);
    await eventually(async () => !a.leading && onA.running === 0, 10_000, 'node a, cut off, stopped its singleton');
  });
});
