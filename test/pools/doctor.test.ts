// `pigeon doctor` through the real CLI: each configured sending IP must be bindable on this host (IPv4 and IPv6).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../support/cli';

describe('doctor: sending IPs', () => {
  it('loopback addresses (IPv4 and IPv6) pass; an address this host does not have fails, and doctor exits 1', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-doctor-'));
    const file = path.join(dir, 'config.json');
    fs.writeFileSync(file, JSON.stringify({
      dataDir: dir,
      http: { port: 0 }, smtp: { submission: { port: 0 }, inbound: { port: 0 } },
      dns: { servers: ['127.0.0.1:9'], timeoutMs: 200 },
      ips: [
        { address: '127.0.0.3', hostname: 'out3.pigeon.test' },
        { address: '::1', hostname: 'out6.pigeon.test' },
        { address: '198.51.100.9', hostname: 'x.pigeon.test' },
      ],
    }));
    try {
      const res = runCli(['doctor', '--config', file]);
      assert.equal(res.code, 1);
      assert.match(res.stdout, /^OK +source address 127\.0\.0\.3: /m);
      assert.match(res.stdout, /^OK +source address ::1: /m);
      assert.match(res.stdout, /^FAIL +source address 198\.51\.100\.9: not an address of this host/m);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
