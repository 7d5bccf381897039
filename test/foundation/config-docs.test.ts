/** config/default.json and the README table are generated from the schema; they must not drift. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, defaultConfigJson, readmeWithTable } from '../../src/cli/gen-docs';
import { describeConfig, parseConfig } from '../../src/config';

const fix = 'run `npx pigeon config write-docs` after changing src/config.ts';

test('config/default.json equals the schema defaults', () => {
  const file = fs.readFileSync(path.join(ROOT, 'config', 'default.json'), 'utf8');
  assert.equal(file, defaultConfigJson(), fix);
  assert.deepEqual(parseConfig(JSON.parse(file)), parseConfig({}), 'the defaults file must itself be a valid config');
});

test('README configuration table lists every setting with its description', () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  assert.equal(readme, readmeWithTable(readme), fix);
  for (const row of describeConfig()) assert.ok(row.description.length > 10, `${row.key} needs a .describe()`);
});

test('the keys DESIGN.md promises exist with those names', () => {
  const c = parseConfig({});
  for (const key of ['hostname', 'dataDir', 'http.host', 'http.port', 'http.publicUrl', 'http.trustProxy', 'smtp.submission.host', 'smtp.submission.port', 'smtp.inbound.host', 'smtp.inbound.port', 'dns.servers', 'delivery.port', 'ips', 'webhooks.allowPrivateTargets', 'webhooks.allowHttp']) {
    const value = key.split('.').reduce<any>((o, k) => o?.[k], c);
    assert.notEqual(value, undefined, key);
  }
});
