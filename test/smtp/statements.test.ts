// What one message over the submission port costs the database once the session is set up: the accept commit and
// nothing else on the writer's connection. The key check of each MAIL FROM is served by the read caches, so it
// neither adds a statement per message nor waits behind the writer's transactions.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { findKeyById } from '../../src/auth/keys';
import { createKey } from '../support/app';
import { addVerifiedDomain, ids, message, startSmtpApp, submissionClient, type SmtpApp, type Transport } from './helpers';

describe('statements per message over SMTP submission', () => {
  let app: SmtpApp;
  let client: Transport;
  const send = async (i: number) => {
    const info = await client.sendMail({ envelope: { from: 'app@example.com', to: [`r${i}@example.org`] }, raw: message({ From: 'app@example.com', To: `r${i}@example.org` }) });
    assert.equal(ids(info.response).length, 1);
  };
  before(async () => {
    app = await startSmtpApp({}, undefined, { holdQueue: true });
    await addVerifiedDomain(app, 'example.com');
    const key = await createKey(app, 'live', ['messages:send']);
    client = submissionClient(app.submissionPort, key, { pool: true, maxConnections: 1 });
  });
  after(async () => {
    client.close();
    await app.stop();
  });

  test('after the first message, the writer runs only the accept transactions: no key lookup, no read outside a transaction', async () => {
    await send(0); // AUTH, and the caches filled
    const outside: string[] = [];
    const keyReads: string[] = [];
    let inTransaction = false;
    let commits = 0;
    const onQuery = (q: { sql: string }) => {
      const sql = q.sql.trim();
      if (/^begin/i.test(sql)) inTransaction = true;
      else if (/^(commit|rollback)/i.test(sql)) {
        inTransaction = false;
        commits++;
      } else if (!inTransaction && !/^pragma/i.test(sql)) outside.push(sql); // the writer's timed WAL checkpoint is a pragma
      if (/api_keys/.test(sql)) keyReads.push(sql);
    };
    app.db.on('query', onQuery);
    try {
      for (let i = 1; i <= 5; i++) await send(i);
    } finally {
      app.db.off('query', onQuery);
    }
    assert.deepEqual(outside, []);
    assert.deepEqual(keyReads, []);
    assert.ok(commits >= 1 && commits <= 5, `one accept commit per message at most, got ${commits}`);
  });

  test('the cache by id answers only for the key\'s own account', async () => {
    const row = await app.db('api_keys').where({ account_id: app.accountId, mode: 'live' }).first();
    assert.equal((await findKeyById(app.db, app.accountId, row.id))?.id, row.id);
    assert.equal(await findKeyById(app.db, 'acc_another', row.id), undefined);
  });
});
