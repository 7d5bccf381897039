// `pigeon doctor` on PostgreSQL, through the real CLI: it checks the database the config points at.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../support/cli';
import { databaseFor, testPostgresAdminUrl } from '../support/postgres';

function writeConfig(dir: string, database: Record<string, unknown>): string {
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify({
    dataDir: dir,
    http: { port: 0 }, smtp: { submission: { port: 0 }, inbound: { port: 0 } },
    dns: { servers: ['127.0.0.1:9'], timeoutMs: 200 },
    ips: [{ address: '127.0.0.1', hostname: 'out.pigeon.test' }],
    database,
  }));
  return file;
}

const line = (stdout: string, name: string) => stdout.split('\n').find((l) => l.replace(/^\w+ +/, '').startsWith(`${name}:`)) ?? '';

describe('doctor on PostgreSQL', () => {
  it('reports the server, the migrations and the connections this node needs', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-pgdoctor-'));
    const url = databaseFor(await testPostgresAdminUrl(), dir);
    try {
      const file = writeConfig(dir, { client: 'postgres', url, poolSize: 7 });
      const first = runCli(['doctor', '--config', file]);
      assert.match(line(first.stdout, 'database'), /^OK +database: PostgreSQL database pigeon_\w+ .*reachable and migrated; schema at migration \d{14} \(\d+ applied now\)$/, first.stdout);
      assert.match(line(first.stdout, 'database server'), /^OK +database server: PostgreSQL \d+/);
      assert.match(line(first.stdout, 'database connections'), /^OK +database connections: this node opens up to 11 connections \(database.poolSize 7 \+ 4\); the server allows \d+/);
      assert.ok(!fs.existsSync(path.join(dir, 'pigeon.db')), 'no SQLite file: the check ran on PostgreSQL');

      const again = runCli(['doctor', '--config', file]);
      assert.match(line(again.stdout, 'database'), /schema at migration \d{14}$/, 'a second run finds nothing to apply');

    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fails with advice, and without the password, when the server cannot be reached', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-pgdoctor-'));
    try {
      const file = writeConfig(dir, { client: 'postgres', url: 'postgres://pigeon:s3cret-pw@127.0.0.1:9/pigeon' });
      const res = runCli(['doctor', '--config', file]);
      assert.equal(res.code, 1);
      assert.match(line(res.stdout, 'database'), /^FAIL +database: cannot open the database: .*check database.url or PIGEON_DATABASE_URL/);
      assert.ok(!res.stdout.includes('s3cret-pw') && !res.stderr.includes('s3cret-pw'), 'the password is not printed');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
