import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp } from '../support/app';

test('a fresh app answers /v1/account with the bootstrap sandbox key', async () => {
  const app = await startTestApp();
  try {
    const res = await app.api.get('/v1/account');
    assert.equal(res.status, 200);
    assert.equal(res.body.name, 'default');
    assert.equal(res.body.key.mode, 'test');
    assert.match(res.headers.get('x-request-id') ?? '', /^req_/);
  } finally {
    await app.stop();
  }
});
