// `pigeon domains …` and the doctor's PTR check, against a temp database and the loopback DNS server.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAccount } from '../../src/auth/accounts';
import { domainsCommand } from '../../src/cli/domains';
import { checkPtr } from '../../src/cli/doctor-ptr';
import { parseConfig, type Config } from '../../src/config';
import { migrateLatest, openDatabase } from '../../src/db';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';

describe('pigeon domains', () => {
  let dns: TestDnsServer;
  let dataDir: string;
  let config: Config;

  before(async () => {
    dns = await startDnsServer();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-cli-'));
    config = parseConfig({ dataDir, dns: { servers: [dns.address], timeoutMs: 300 }, domains: { dnsTimeoutMs: 300 } });
    const db = openDatabase(config);
    await migrateLatest(db);
    await createAccount(db, 'default', 0);
    await db.destroy();
  });
  after(async () => {
    await dns.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function run(...args: string[]): Promise<string[]> {
    const lines: string[] = [];
    const flags: Record<string, string | boolean> = {};
    const positional = args.filter((a, i) => {
      if (a.startsWith('--')) return false;
      if (i > 0 && args[i - 1].startsWith('--') && args[i - 1] !== '--json') return false;
      return true;
    });
    args.forEach((a, i) => a.startsWith('--') && (flags[a.slice(2)] = a === '--json' ? true : args[i + 1]));
    await domainsCommand({ config, args: positional, flags, out: (l) => lines.push(l) });
    return lines;
  }

  it('add prints the records as zone-file lines a sysadmin can paste', async () => {
    const lines = await run('add', 'Zone.test');
    assert.match(lines[0], /^; zone\.test: pending \(signing with pg\d{6}[a-z0-9]{4}, rsa\)$/);
    const records = lines.filter((l) => !l.startsWith(';'));
    assert.equal(records.length, 4);
    const dkim = records[0];
    assert.match(dkim, /^pg\d{6}[a-z0-9]{4}\._domainkey\.zone\.test\. 3600 IN TXT "v=DKIM1; k=rsa; p=[^"]+" "[^"]+"$/);
    for (const s of dkim.matchAll(/"([^"]*)"/g)) assert.ok(s[1].length <= 255);
    assert.equal(records[1], 'zone.test. 3600 IN TXT "v=spf1 ip4:127.0.0.1 ~all"');
    assert.match(records[2], /^_dmarc\.zone\.test\. 3600 IN TXT "v=DMARC1; p=none/);
    assert.equal(records[3], 'bounces.zone.test. 3600 IN CNAME mail.example.com.');
    assert.ok(lines.some((l) => /^; dkim, required: pending$/.test(l)));
  });

  it('verify prints each record state and what was found instead', async () => {
    const shown = await run('show', 'zone.test', '--json');
    const view = JSON.parse(shown[0]);
    const dkim = view.dns_records[0];
    dns.set(dkim.host, [{ type: 'TXT', data: dkim.value.match(/.{1,255}/g) }]);
    dns.set('zone.test', [{ type: 'TXT', data: 'v=spf1 ip4:192.0.2.1 ~all' }]);
    const lines = await run('verify', 'zone.test');
    assert.ok(lines.includes('; dkim, required: verified'), lines.join('\n'));
    assert.ok(lines.includes('; spf, required: mismatch (SPF softfail for 127.0.0.1)'), lines.join('\n'));
    assert.ok(lines.includes(';   found: v=spf1 ip4:192.0.2.1 ~all'));
    assert.match((await run('list'))[0], /^zone\.test\tpending\t-\t\d{4}-/);
  });

  it('rotate, delete, and mistakes', async () => {
    const rotated = await run('rotate', 'zone.test');
    assert.ok(rotated.some((l) => /^; dkim, rotation, optional: pending$/.test(l)));
    assert.deepEqual(await run('delete', 'zone.test'), ['deleted zone.test; cancelled 0 unsent message(s)']);
    await assert.rejects(run('show', 'zone.test'), /domain not found/);
    await assert.rejects(run('add', '10.0.0.1'), /IP address/);
    await assert.rejects(run('add', 'x.test', '--account', 'nobody'), /no account named 'nobody'/);
    await assert.rejects(run('add', 'x.test', '--algorithm', 'dsa'), /rsa or ed25519/);
    await assert.rejects(run('verify'), /usage/);
    assert.match((await run('add', 'ed.test', '--algorithm', 'ed25519'))[0], /ed25519\)$/);
  });

  it('doctor: a sending IP needs a PTR naming its hostname, which resolves back to it', async () => {
    const ips = [
      { address: '127.0.0.2', hostname: 'out1.pigeon.test' },
      { address: '127.0.0.3', hostname: 'out2.pigeon.test' },
      { address: '127.0.0.4', hostname: 'out3.pigeon.test' },
      { address: '127.0.0.5', hostname: 'out4.pigeon.test' },
    ];
    dns.set('2.0.0.127.in-addr.arpa', [{ type: 'PTR', data: 'out1.pigeon.test' }]);
    dns.set('out1.pigeon.test', [{ type: 'A', data: '127.0.0.2' }]);
    dns.set('3.0.0.127.in-addr.arpa', [{ type: 'PTR', data: 'host-3.provider.test' }]);
    dns.set('4.0.0.127.in-addr.arpa', [{ type: 'PTR', data: 'out3.pigeon.test' }]);
    dns.set('out3.pigeon.test', [{ type: 'A', data: '127.0.0.99' }]);
    const results = await checkPtr(parseConfig({ dns: { servers: [dns.address], timeoutMs: 300 }, ips }));
    assert.deepEqual(results.map((r) => r.status), ['ok', 'fail', 'fail', 'fail']);
    assert.match(results[1].detail, /PTR is host-3\.provider\.test, not out2\.pigeon\.test/);
    assert.match(results[2].detail, /resolves to 127\.0\.0\.99, not 127\.0\.0\.4/);
    assert.match(results[3].detail, /reverse lookup: no record; ask the owner of 127\.0\.0\.5/);
  });
});
