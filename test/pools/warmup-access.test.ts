// Who may change the warm-up of an address: the operator (CLI) for shared addresses, the owning account's live
// keys for addresses dedicated to it. Attacks from a second account, checked against real live mail sent by the
// first account through the MTA to an SMTP sink.
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { FakeClock } from '../../src/clock';
import { createAccount } from '../../src/auth/accounts';
import { createKey as createKeyInDb } from '../../src/auth/keys';
import { SCOPES } from '../../src/auth/scopes';
import { ipRuntimeFor } from '../../src/pools/runtime';
import { saveWarmup } from '../../src/pools/ip-state';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import type { ApiClient } from '../support/app';
import { CLI } from '../support/cli';
import { pointMx, sendMessage, startWorld, type World } from '../delivery/world';
import { insertQueued, ipOf, liveClient, type PoolBody } from './helpers';

const SHARED = { address: '127.0.0.20', hostname: 'out20.pigeon.test' };
const OWN = { address: '127.0.0.21', hostname: 'out21.pigeon.test', account: 'default' };
const NOON = Date.UTC(2026, 2, 2, 12, 0);

/** A second account "other" with a sandbox key (every scope) and a live key (ip-pools:manage). */
async function secondAccount(w: World): Promise<{ id: string; sandbox: ApiClient; live: ApiClient }> {
  const account = await createAccount(w.app.db, 'other', w.clock.now());
  const key = async (mode: 'test' | 'live', scopes: typeof SCOPES[number][]) =>
    w.app.api.withKey((await createKeyInDb(w.app.db, { accountId: account.id, name: mode, mode, scopes }, w.clock.now())).secret);
  return { id: account.id, sandbox: await key('test', [...SCOPES]), live: await key('live', ['ip-pools:manage']) };
}

/** The operator's warm-up of an address, written as `pigeon pools warmup start` (and `pause`) write it. */
async function operatorWarmup(w: World, address: string, schedule: number[], status: 'warming' | 'paused' = 'warming') {
  const now = w.clock.now();
  await saveWarmup(w.app.db, {
    address, status, scheduleName: 'custom', schedule, dayIndex: 0, dayDate: null,
    startedAt: now, pausedAt: status === 'paused' ? now : null, finishedAt: null, finishedReason: null, updatedAt: now,
  });
  ipRuntimeFor(w.app.deps).invalidate();
}

const from = (sink: SmtpSink) => sink.messages.map((m) => m.remoteAddress);

describe('warm-up access', () => {
  let sink: SmtpSink;
  let dns: TestDnsServer;

  before(async () => {
    sink = await startSmtpSink({ host: '127.0.0.3' });
    dns = await startDnsServer();
    pointMx(dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.3' }]);
  });
  after(async () => {
    await Promise.all([sink.close(), dns.close()]);
  });

  describe('on a shared address', () => {
    let w: World;
    let other: Awaited<ReturnType<typeof secondAccount>>;

    before(async () => {
      w = await startWorld({ port: sink.port, clock: new FakeClock(NOON), dns, config: { ips: [SHARED] } });
      other = await secondAccount(w);
    });
    after(() => w.stop());
    beforeEach(async () => {
      await w.app.db('ip_warmups').delete();
      ipRuntimeFor(w.app.deps).invalidate();
      sink.messages.length = 0;
    });

    /** Account 1 sends live mail through the MTA; all of it must arrive from the shared address. */
    async function firstAccountMailFlows(n = 3) {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) ids.push(await sendMessage(w, { to: `r${i}@dest.test` }));
      await w.mta.runOnce();
      const rows = await w.app.db('messages').whereIn('id', ids).select('status');
      assert.deepEqual(rows.map((r: { status: string }) => r.status), ids.map(() => 'delivered'));
      assert.deepEqual(from(sink), ids.map(() => SHARED.address));
    }

    /** The attacker's sandbox key gets 403 live_key_required, its live key 403 operator_managed naming the address. */
    async function refused(path: string, body: object) {
      const sandbox = await other.sandbox.post(path, body);
      assert.deepEqual([sandbox.status, sandbox.body.error?.code], [403, 'live_key_required'], sandbox.text);
      const live = await other.live.post(path, body);
      assert.deepEqual([live.status, live.body.error?.type, live.body.error?.code], [403, 'permission_error', 'operator_managed'], live.text);
      assert.match(live.body.error.message, /127\.0\.0\.20 is shared by every account.*pigeon pools warmup/);
    }

    it('a second account\'s sandbox key cannot start warm-up on the shared default pool; the first account\'s live mail keeps flowing', async () => {
      await refused('/v1/ip-pools/default/warmup', { schedule: Array(30).fill(1) });
      await refused('/v1/ip-pools/default/warmup', { ips: [SHARED.address], schedule: [1] });
      assert.equal((await other.live.post('/v1/ip-pools', { name: 'mine', ips: [SHARED.address] })).status, 201);
      await refused('/v1/ip-pools/mine/warmup', { schedule: [1] });
      assert.deepEqual(await w.app.db('ip_warmups'), []);
      await firstAccountMailFlows();
    });

    for (const [action, before, status] of [['pause', 'warming', 'warming'], ['resume', 'paused', 'paused'], ['stop', 'warming', 'warming']] as const) {
      it(`a second account's sandbox key cannot ${action} the operator's warm-up of the shared default pool; the first account's live mail keeps flowing`, async () => {
        await operatorWarmup(w, SHARED.address, [1000], before);
        const rows = await w.app.db('ip_warmups');
        await refused(`/v1/ip-pools/default/warmup/${action}`, {});
        await refused(`/v1/ip-pools/default/warmup/${action}`, { ips: [SHARED.address] });
        assert.deepEqual(await w.app.db('ip_warmups'), rows, 'the warm-up is untouched');
        assert.equal(rows[0].status, status);
        await firstAccountMailFlows();
      });
    }
  });

  describe('on an address dedicated to the first account', () => {
    let w: World;
    let owner: ApiClient;
    let other: Awaited<ReturnType<typeof secondAccount>>;

    before(async () => {
      w = await startWorld({ port: sink.port, clock: new FakeClock(NOON), dns, config: { ips: [SHARED, OWN] } });
      owner = await liveClient(w.app);
      other = await secondAccount(w);
    });
    after(() => w.stop());

    it('a live key of the owning account manages warm-up of its dedicated address; a request that also names a shared one is refused whole', async () => {
      const started = await owner.post('/v1/ip-pools/default/warmup', { ips: [OWN.address], schedule: [10, 20] });
      assert.equal(started.status, 200, started.text);
      assert.deepEqual([ipOf(started.body, OWN.address).warmup.status, ipOf(started.body, OWN.address).warmup.today_cap], ['warming', 10]);
      assert.equal(ipOf(started.body, SHARED.address).warmup.status, 'warm');
      for (const [action, status] of [['pause', 'paused'], ['resume', 'warming'], ['stop', 'warm']] as const) {
        const res = await owner.post(`/v1/ip-pools/default/warmup/${action}`, { ips: [OWN.address] });
        assert.deepEqual([res.status, ipOf(res.body, OWN.address).warmup.status], [200, status], res.text);
      }
      assert.equal((await owner.post('/v1/ip-pools', { name: 'own', ips: [OWN.address] })).status, 201);
      assert.equal((await owner.post('/v1/ip-pools/own/warmup', {})).status, 200, 'a pool of dedicated addresses only');

      const rows = await w.app.db('ip_warmups').orderBy('address');
      const implied = await owner.post('/v1/ip-pools/default/warmup', { schedule: [1] });
      assert.deepEqual([implied.status, implied.body.error.code, implied.body.error.param], [403, 'operator_managed', undefined]);
      assert.match(implied.body.error.message, /^127\.0\.0\.20 is shared by every account/);
      const named = await owner.post('/v1/ip-pools/default/warmup/pause', { ips: [OWN.address, SHARED.address] });
      assert.deepEqual([named.status, named.body.error.code, named.body.error.param], [403, 'operator_managed', 'ips[1]']);
      const sandbox = await w.app.api.post('/v1/ip-pools/own/warmup/stop', {});
      assert.deepEqual([sandbox.status, sandbox.body.error.code], [403, 'live_key_required']);
      assert.deepEqual(await w.app.db('ip_warmups').orderBy('address'), rows, 'refused requests change nothing');
      await owner.post('/v1/ip-pools/own/warmup/stop', {});
    });

    it('another account cannot use a dedicated address: not in its default pool, not in a pool of its own, not in its mail, overflow included', async () => {
      const dflt = (await other.live.get('/v1/ip-pools/default')).body as PoolBody;
      assert.deepEqual(dflt.ips.map((i) => i.address), [SHARED.address]);
      const steal = await other.live.post('/v1/ip-pools', { name: 'steal', ips: [SHARED.address, OWN.address] });
      assert.deepEqual([steal.status, steal.body.error.code, steal.body.error.param], [422, 'unknown_ip', 'ips[1]']);
      const warm = await other.live.post('/v1/ip-pools/default/warmup', { ips: [OWN.address] });
      assert.deepEqual([warm.status, warm.body.error.code], [422, 'unknown_ip']);
      assert.equal((await other.live.post('/v1/ip-pools', { name: 'busy', ips: [SHARED.address] })).status, 201);
      assert.equal((await other.live.patch('/v1/ip-pools/busy', { overflow: 'default' })).status, 200);
      assert.equal((await other.live.patch('/v1/ip-pools/busy', { ips: [OWN.address] })).body.error?.code, 'unknown_ip');

      // The shared address is at its cap (the operator's warm-up): the other account's mail, from its pool
      // (overflowing into its default pool) and from its default pool, waits; none leaves from the dedicated address.
      await operatorWarmup(w, SHARED.address, [1]);
      sink.messages.length = 0;
      const waiting = [
        await insertQueued(w.app.db, other.id, 'busy', { now: w.clock.now() }),
        await insertQueued(w.app.db, other.id, null, { now: w.clock.now() }),
      ];
      const mine = await sendMessage(w, { to: 'me@dest.test' });
      await w.mta.runOnce();
      assert.deepEqual(from(sink), [OWN.address], 'only the owner\'s message left, from its dedicated address');
      assert.equal((await w.app.db('messages').where({ id: mine }).first()).status, 'delivered');
      const rows = await w.app.db('messages').whereIn('id', waiting).select('status', 'attempts');
      assert.deepEqual(rows, [{ status: 'queued', attempts: 0 }, { status: 'queued', attempts: 0 }]);
    });
  });

  describe('from the operator\'s CLI', () => {
    let w: World;
    let config: string;
    /** Runs `pigeon pools …` as a child process, without blocking this process (the app under test runs in it). */
    const runCli = (args: string[]) => new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [CLI, ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      });
    });
    /** `pigeon pools … --json` against the running app's database and config: the parsed output. */
    const pools = async (...args: string[]) => {
      const res = await runCli(['pools', ...args, '--json', '--config', config]);
      assert.equal(res.code, 0, res.stderr);
      return JSON.parse(res.stdout) as Array<PoolBody['ips'][number] & { account: string | null }>;
    };

    before(async () => {
      w = await startWorld({ port: sink.port, clock: new FakeClock(NOON), dns, config: { ips: [SHARED, OWN] } });
      config = path.join(w.app.dataDir, 'pigeon.json');
      fs.writeFileSync(config, JSON.stringify(w.app.deps.config));
      sink.messages.length = 0;
    });
    after(() => w.stop());

    it('the CLI lists the addresses with their owner and starts, pauses, resumes and stops warm-up of a shared address; the running server follows', async () => {
      const listed = await pools('list');
      assert.deepEqual(listed.map((ip) => [ip.address, ip.account, ip.warmup.status]), [[SHARED.address, null, 'warm'], [OWN.address, 'default', 'warm']]);

      const [started] = await pools('warmup', 'start', '--ips', SHARED.address, '--schedule', '1,2');
      assert.deepEqual([started.address, started.warmup.status, started.warmup.day, started.warmup.days, started.warmup.today_cap], [SHARED.address, 'warming', 1, 2, 1]);
      const api = ipOf((await w.app.api.get('/v1/ip-pools/default')).body, SHARED.address);
      assert.equal(api.warmup.status, 'warming', 'the API shows the operator\'s warm-up');

      assert.deepEqual((await pools('warmup', 'pause', '--all')).map((ip) => ip.warmup.status), ['paused', 'warm'], '--all skips addresses not in warm-up');
      assert.equal((await pools('warmup', 'resume', '--ips', SHARED.address))[0].warmup.status, 'warming');
      const notWarming = await runCli(['pools', 'warmup', 'pause', '--ips', OWN.address, '--config', config]);
      assert.deepEqual([notWarming.code, /127\.0\.0\.21 is not in warm-up/.test(notWarming.stderr)], [1, true], notWarming.stderr);
      assert.equal((await runCli(['pools', 'warmup', 'start', '--ips', '192.0.2.1', '--config', config])).code, 2, 'an address not in config ips');
      assert.equal((await runCli(['pools', 'warmup', 'start', '--config', config])).code, 2, 'neither --ips nor --all');

      // The shared address is capped at 1 a day (none by 13:00): the owner's mail leaves from its dedicated address.
      await sendMessage(w, { to: 'a@dest.test' });
      await w.mta.runOnce();
      assert.deepEqual(from(sink), [OWN.address]);

      const [stopped] = await pools('warmup', 'stop', '--ips', SHARED.address);
      assert.deepEqual([stopped.warmup.status, stopped.warmup.finished_reason], ['warm', 'stopped']);
      // The server reads warm-up rows again every 2 s (real time) and then drops the refusals it remembered.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      for (let i = 0; i < 4; i++) await sendMessage(w, { to: `b${i}@dest.test` });
      await w.mta.runOnce();
      assert.ok(from(sink).includes(SHARED.address), `after stop the shared address sends again: ${from(sink)}`);
    });
  });
});
