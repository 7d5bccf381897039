// Relay by network: a key bound to networks lets clients there relay without AUTH, on the submission port and the
// optional relay listener, under every rule of authenticated relay; everyone else gets 530, never an open relay.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount } from '../../src/auth/accounts';
import { invalidateRelayNetworks, relayKeyFor } from '../../src/auth/relay-networks';
import { keysCommand } from '../../src/cli/keys';
import { UsageError } from '../../src/cli/common';
import { liveApi } from '../support/app';
import { verifyDkim } from '../support/mail';
import { ids, RawSmtp, refusal, submissionClient } from './helpers';
import { SENDER_DOMAIN, startRelayWorld, type RelayWorld } from './world';

describe('relay by network', () => {
  let world: RelayWorld;
  let relayPort: number;

  /** `pigeon keys create …` in this process, on the app's database; the app sees the new network at once. */
  async function keys(args: string[], flags: Record<string, string | string[] | boolean>): Promise<string[]> {
    const lines: string[] = [];
    await keysCommand({ config: world.app.config, args, flags, out: (l) => lines.push(l) });
    invalidateRelayNetworks(world.app.db);
    return lines;
  }

  const mail = (from = `printer@${SENDER_DOMAIN}`) => ({ from, to: 'ops@dest.test', subject: 'Toner low', text: 'Replace the black cartridge.' });
  const client = (port: number, localAddress: string) => submissionClient(port, null, { localAddress });

  before(async () => {
    world = await startRelayWorld({ relayListener: true });
    relayPort = world.app.listeners['smtp-relay'].port;
    await keys(['create'], { mode: 'live', scopes: 'messages:send', name: 'printers', 'relay-from': ['127.0.0.2/32'] });
  });
  after(async () => {
    await world.stop();
  });

  test('a client in the network relays without AUTH over the submission port; the mail is delivered DKIM-signed', async () => {
    const before = world.sink.messages.length;
    const info = await client(world.app.submissionPort, '127.0.0.2').sendMail(mail());
    const [id] = ids(info.response);
    assert.ok(id, info.response);
    await world.mta.runOnce();
    const [arrived] = (await world.sink.waitFor(before + 1)).slice(before);
    assert.deepEqual(arrived.rcptTo, ['ops@dest.test']);
    const [dkim] = await verifyDkim(arrived.raw, world.dns.address);
    assert.equal(dkim.result, 'pass', dkim.info);
    const row = await world.app.db('messages').where({ id }).first();
    assert.equal(row.mode, 'live');
  });

  test('the account sees each key\'s relay networks in GET /v1/api-keys', async () => {
    const res = await (await liveApi(world.app, ['account:manage'])).get('/v1/api-keys?limit=100');
    const printers = res.body.data.find((k: { name: string }) => k.name === 'printers');
    assert.deepEqual(printers.relay_from, ['127.0.0.2/32']);
    assert.deepEqual(res.body.data.find((k: { name: string }) => k.name !== 'printers').relay_from, []);
  });

  test('a client outside every relay network gets a clear 530 at MAIL FROM on both listeners, and nothing is stored', async () => {
    const count = await world.app.db('messages').count({ n: '*' }).first();
    for (const port of [world.app.submissionPort, relayPort]) {
      const r = await refusal(client(port, '127.0.0.3').sendMail(mail()));
      assert.equal(r.code, 530);
      assert.equal(r.command, 'MAIL FROM');
      assert.match(r.response, /^530 5\.7\.0 Authentication required: 127\.0\.0\.3 is not in a relay network of any API key/);
    }
    assert.deepEqual(await world.app.db('messages').count({ n: '*' }).first(), count);
  });

  test('a client that keeps trying MAIL FROM without AUTH from outside every network is let go after three 530s', async () => {
    const raw = await RawSmtp.connect(world.app.submissionPort, '127.0.0.3');
    await raw.command('EHLO client.test');
    for (let i = 0; i < 3; i++) assert.match(await raw.command(`MAIL FROM:<probe${i}@example.com>`), /^530 5\.7\.0/);
    assert.equal(await raw.reply(), 'closed');
  });

  test('the relay listener offers no AUTH and accepts the network\'s clients', async () => {
    const raw = await RawSmtp.connect(relayPort, '127.0.0.3');
    const ehlo = await raw.command('EHLO device.test');
    assert.match(ehlo, /^250/);
    assert.doesNotMatch(ehlo, /AUTH/);
    assert.match(await raw.command('AUTH PLAIN AGFwaWtleQBub3Bl'), /^50[02]/);
    raw.socket.destroy();
    const info = await client(relayPort, '127.0.0.2').sendMail(mail());
    assert.equal(ids(info.response).length, 1);
  });

  test('relayed mail obeys the key\'s rules: a From domain not verified for its account is refused', async () => {
    const r = await refusal(client(world.app.submissionPort, '127.0.0.2').sendMail(mail('someone@unverified.test')));
    assert.equal(r.code >= 500 && r.code < 600, true, r.response);
    assert.match(r.response, /unverified\.test/);
  });

  test('a network overlapping another account\'s is refused; the same account may nest networks, the most specific wins', async () => {
    await createAccount(world.app.db, 'tenant-b', world.clock.now());
    await assert.rejects(
      keys(['create'], { mode: 'live', account: 'tenant-b', 'relay-from': ['127.0.0.0/24'] }),
      (err: Error) => err instanceof UsageError && /127\.0\.0\.0\/24 overlaps 127\.0\.0\.2\/32 \(key key_\w+ of another account\)/.test(err.message),
    );
    assert.equal(await world.app.db('relay_networks').where({ network: '127.0.0.0/24' }).count({ n: '*' }).first().then((r) => Number(r?.n)), 0);
    const [json] = await keys(['create'], { mode: 'live', scopes: 'messages:send', 'relay-from': ['127.0.0.0/30'], json: true });
    assert.deepEqual(JSON.parse(json).relay_from, ['127.0.0.0/30']);
    const printers = await world.app.db('api_keys').where({ name: 'printers' }).first();
    assert.equal((await relayKeyFor(world.app.db, '127.0.0.2'))?.keyId, printers.id);
    assert.equal((await relayKeyFor(world.app.db, '::ffff:127.0.0.1'))?.keyId, JSON.parse(json).id);
    assert.equal(await relayKeyFor(world.app.db, '127.0.0.9'), undefined);
  });

  test('--relay-from must be a network and needs the messages:send scope', async () => {
    await assert.rejects(keys(['create'], { mode: 'live', 'relay-from': ['10.0.0.0/33'] }), /--relay-from '10\.0\.0\.0\/33'/);
    await assert.rejects(keys(['create'], { mode: 'live', scopes: 'messages:read', 'relay-from': ['10.1.0.0/16'] }), /messages:send scope/);
  });

  test('a revoked key\'s network relays no more', async () => {
    const printers = await world.app.db('api_keys').where({ name: 'printers' }).first();
    const nested = await world.app.db('relay_networks').where({ network: '127.0.0.0/30' }).first();
    await keys(['revoke', printers.id], {});
    await keys(['revoke', nested.key_id], {});
    const r = await refusal(client(world.app.submissionPort, '127.0.0.2').sendMail(mail()));
    assert.equal(r.code, 530);
  });
});
