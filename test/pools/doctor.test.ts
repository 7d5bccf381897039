// `pigeon doctor`: each configured sending IP must be bindable on this host.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkBindable } from '../../src/cli/doctor-bind';
import { parseConfig } from '../../src/config';
import { runCli } from '../support/cli';

describe('doctor: sending IPs', () => {
  it('loopback addresses are bindable; an address this host does not have fails with the fix', async () => {
    const results = await checkBindable(parseConfig({
      ips: [
        { address: '127.0.0.2', hostname: 'out2.pigeon.test' },
        { address: '::1', hostname: 'out6.pigeon.test' },
        { address: '192.0.2.77', hostname: 'gone.pigeon.test' },
      ],
    }));
    assert.deepEqual(results.map((r) => [r.name, r.status]), [['bind 127.0.0.2', 'ok'], ['bind ::1', 'ok'], ['bind 192.0.2.77', 'fail']]);
    assert.match(results[2].detail, /192\.0\.2\.77 is not assigned to any interface of this host; add it/);
  });

  it('the pigeon doctor command prints the check and exits 1 on a failure', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-doctor-'));
    const file = path.join(dir, 'config.json');
    fs.writeFileSync(file, JSON.stringify({
      dataDir: dir,
      http: { port: 0 }, smtp: { submission: { port: 0 }, inbound: { port: 0 } },
      dns: { servers: ['127.0.0.1:9'], timeoutMs: 200 },
      ips: [{ address: '127.0.0.3', hostname: 'out3.pigeon.test' }, { address: '198.51.100.9', hostname: 'x.pigeon.test' }],
    }));
    const res = runCli(['doctor', '--config', file]);
    assert.equal(res.code, 1);
    assert.match(res.stdout, /^OK +bind 127\.0\.0\.3: /m);
    assert.match(res.stdout, /^FAIL +bind 198\.51\.100\.9: .*not assigned/m);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
