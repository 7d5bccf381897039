// DELETE /v1/domains/{domain}: the domain and its keys go, unsent mail from it is cancelled, history stays.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { getSigningKey } from '../../src/domains/signing';
import { liveApi, startTestApp, type TestApp } from '../support/app';
import { addDomain } from './helpers';

describe('deleting a domain', () => {
  let app: TestApp;
  let accountId: string;

  before(async () => {
    app = await startTestApp();
    app.api = await liveApi(app); // deleting a domain needs a live key
    accountId = (await app.api.get('/v1/account')).body.id;
    await app.db('message_contents').insert({ id: 'mc_1', raw: Buffer.from('x'), size: 1, created_at: 0 });
  });
  after(() => app.stop());

  async function message(id: string, status: string, sendingDomain: string, account = accountId): Promise<void> {
    await app.db('messages').insert({
      id, account_id: account, mode: 'live', status, batch_id: 'b', content_id: 'mc_1', from_email: `a@${sendingDomain}`,
      to_email: 'r@receiver.test', recipient_domain: 'receiver.test', sending_domain: sendingDomain, message_id_header: `${id}@x`,
      next_attempt_at: ['delivered', 'bounced'].includes(status) ? null : 1000, created_at: 0, updated_at: 0,
    });
  }
  const statusOf = async (id: string) => (await app.db('messages').where({ id }).first()) as { status: string; next_attempt_at: number | null };

  it('cancels scheduled, queued and deferred messages from the domain and keeps delivered ones', async () => {
    await addDomain(app.api, 'gone.test');
    await addDomain(app.api, 'stays.test');
    await message('msg_scheduled', 'scheduled', 'gone.test');
    await message('msg_queued', 'queued', 'gone.test');
    await message('msg_deferred', 'deferred', 'gone.test');
    await message('msg_delivered', 'delivered', 'gone.test');
    await message('msg_bounced', 'bounced', 'gone.test');
    await message('msg_other_domain', 'queued', 'stays.test');
    await app.db('accounts').insert({ id: 'acc_other', name: 'other', created_at: 0 });
    await message('msg_other_account', 'queued', 'gone.test', 'acc_other');

    const res = await app.api.delete('/v1/domains/GONE.test');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { name: 'gone.test', deleted: true, cancelled_messages: 3 });

    for (const id of ['msg_scheduled', 'msg_queued', 'msg_deferred']) {
      assert.deepEqual(await statusOf(id).then((m) => [m.status, m.next_attempt_at]), ['cancelled', null], id);
    }
    assert.equal((await statusOf('msg_delivered')).status, 'delivered');
    assert.equal((await statusOf('msg_bounced')).status, 'bounced');
    assert.equal((await statusOf('msg_other_domain')).status, 'queued');
    assert.equal((await statusOf('msg_other_account')).status, 'queued');

    assert.equal((await app.api.get('/v1/domains/gone.test')).status, 404);
    assert.equal(await getSigningKey(app.db, app.dataDir, accountId, 'gone.test'), null);
    assert.equal((await app.db('domain_keys').count({ n: '*' }).first())?.n, 1, 'only stays.test keeps a key');
    const events = await app.db('domain_events').where({ domain: 'gone.test' });
    assert.deepEqual(events.map((e) => [e.type, JSON.parse(e.data).cancelled_messages]), [['domain.deleted', 3]]);
  });

  it('a deleted domain can be added again with a new key', async () => {
    const first = await addDomain(app.api, 'again.test');
    assert.equal((await app.api.delete('/v1/domains/again.test')).status, 200);
    const second = await addDomain(app.api, 'again.test');
    assert.notEqual(second.id, first.id);
    assert.notEqual(second.dns_records[0].value, first.dns_records[0].value);
  });

  it('deleting an unknown domain is 404', async () => {
    const res = await app.api.delete('/v1/domains/never.test');
    assert.equal(res.status, 404);
    assert.equal(res.body.error.type, 'not_found_error');
  });
});
