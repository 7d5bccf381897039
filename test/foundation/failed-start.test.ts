// A start that fails at the last step (the HTTP port is taken) leaves nothing behind: the SMTP and metrics
// listeners it had opened are closed again, as are the writer, its checkpoint connection and the database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../../src/app';
import { testConfig } from '../support/app';

const listeningServers = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap').length;

test('a taken HTTP port fails the start and closes the listeners opened before it', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-failed-start-'));
  const taken = net.createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  try {
    const port = (taken.address() as net.AddressInfo).port;
    const before = listeningServers();
    await assert.rejects(createApp(testConfig(dir, { http: { host: '127.0.0.1', port }, log: { level: 'silent' } })), /EADDRINUSE/);
    assert.equal(listeningServers(), before, 'no SMTP or metrics listener left open');
  } finally {
    await new Promise((resolve) => taken.close(resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
