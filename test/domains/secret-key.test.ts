// A node whose <dataDir>/secret.key is not the one the database's DKIM keys were sealed with (a second node started
// with a fresh dataDir, a database restored without its key) refuses to start, and `pigeon doctor` says why.
// Through the real CLI: the master key is cached per process, so each start needs a process of its own.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { runCliAsync, startServer } from '../support/cli';
import { startTestApp, testConfig } from '../support/app';
import { addDomain } from './helpers';

describe('secret.key must open the DKIM keys in the database', () => {
  let dataDir: string;
  let keyFile: string;
  let configFile: string;
  let original: Buffer;

  before(async () => {
    const app = await startTestApp();
    dataDir = app.dataDir;
    const domain = await addDomain(app.api, 'sealed.test'); // seals a DKIM key with this dataDir's secret.key
    assert.ok(domain.dkim?.selector);
    await app.close(); // keeps dataDir (and on PostgreSQL its database)
    keyFile = path.join(dataDir, 'secret.key');
    original = fs.readFileSync(keyFile);
    configFile = path.join(dataDir, 'config.json');
    const config = testConfig(dataDir, { log: { level: 'info' }, dns: { servers: ['127.0.0.1:9'], timeoutMs: 200 } });
    fs.writeFileSync(configFile, JSON.stringify(config));
  });
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  const doctorLine = async () => /^(OK|WARN|FAIL) +secret\.key: .*$/m.exec((await runCliAsync(['doctor', '--config', configFile])).stdout)?.[0];

  it('with the key that sealed them, doctor reports ok and the server starts', async () => {
    assert.match((await doctorLine()) ?? '', /^OK +secret\.key: opens the DKIM keys/);
    const server = await startServer(configFile);
    assert.equal(await server.stop('SIGTERM'), 0);
  });

  it('with another secret.key the server refuses to start and doctor fails, both naming the fix', async () => {
    fs.writeFileSync(keyFile, crypto.randomBytes(32), { mode: 0o600 });
    try {
      const serve = await runCliAsync(['serve', '--config', configFile]);
      assert.notEqual(serve.code, 0);
      assert.match(serve.stderr + serve.stdout, /secret\.key in dataDir does not open the DKIM keys in the database.*copy it from a node/);
      assert.match((await doctorLine()) ?? '', /^FAIL +secret\.key: .*does not open the DKIM keys/);
    } finally {
      fs.writeFileSync(keyFile, original, { mode: 0o600 });
    }
  });
});
