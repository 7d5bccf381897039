// TLS reporting (RFC 8460): a day of mixed TLS results toward a domain that asks for reports becomes one
// gzipped report, valid against the RFC's schema, delivered to its https: and mailto: rua on loopback.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import Ajv from 'ajv';
import { simpleParser } from 'mailparser';
import { startSmtpSink } from '../support/smtp-sink';
import { TlsReportWorker } from '../../src/tls-policy/worker';
import { createTestCa } from './test-ca';
import { policyText, startStsServer } from './sts-server';
import { TLSRPT_SCHEMA } from './tlsrpt-schema';
import { pointMx, sendMessage, startWorld } from './world';

interface Posted {
  contentType: string;
  body: Buffer;
}

async function startRuaReceiver(certificate: { key: string; cert: string }) {
  const posts: Posted[] = [];
  const server = https.createServer(certificate, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push({ contentType: String(req.headers['content-type']), body: Buffer.concat(chunks) });
      res.writeHead(201).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { posts, port: (server.address() as AddressInfo).port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('TLS reporting', () => {
  it('reports a day of successes and failures to the https: and mailto: rua, valid against the RFC 8460 schema', async () => {
    const ca = createTestCa();
    const sts = await startStsServer(ca.issue(['mta-sts.report.test']));
    const rua = await startRuaReceiver(ca.issue(['rua.reports.test']));
    const good = await startSmtpSink({ host: '127.0.0.2', tls: 'starttls', certificate: ca.issue(['mx1.report.test', 'mx.reports.test']) });
    const wrongName = await startSmtpSink({ host: '127.0.0.3', port: good.port, tls: 'starttls', certificate: ca.issue(['somewhere-else.test']) });
    const world = await startWorld({ port: good.port, config: { delivery: { tlsCaFile: ca.file, mtaSts: { httpsPort: sts.port }, tlsReports: { organization: 'Pigeon Test' } } } });
    try {
      const dns = world.dns;
      dns.set('_mta-sts.report.test', [{ type: 'TXT', data: 'v=STSv1; id=20260105' }]);
      dns.set('mta-sts.report.test', [{ type: 'A', data: '127.0.0.1' }]);
      sts.policies.set('report.test', policyText('testing', ['*.report.test']));
      dns.set('_smtp._tls.report.test', [{ type: 'TXT', data: `v=TLSRPTv1; rua=mailto:tlsrpt@reports.test,https://rua.reports.test:${rua.port}/tlsrpt` }]);
      dns.set('rua.reports.test', [{ type: 'A', data: '127.0.0.1' }]);
      pointMx(dns, 'reports.test', [{ name: 'mx.reports.test', address: '127.0.0.2' }]);
      pointMx(dns, 'quiet.test', [{ name: 'mx1.report.test', address: '127.0.0.2' }]); // asks for no reports

      // Two verified sessions, one certificate for another name, one MX outside the policy (testing: all delivered).
      const day = new Date(world.clock.now()).toISOString().slice(0, 10);
      pointMx(dns, 'report.test', [{ name: 'mx1.report.test', address: '127.0.0.2' }]);
      await sendMessage(world, { to: 'a@report.test' });
      await sendMessage(world, { to: 'b@report.test' });
      await sendMessage(world, { to: 'c@quiet.test' });
      await world.mta.runOnce();
      for (const mx of [{ name: 'mx2.report.test', address: '127.0.0.3' }, { name: 'mx.elsewhere.test', address: '127.0.0.2' }]) {
        world.clock.advance(61_000); // past the MX and policy answer cache
        pointMx(dns, 'report.test', [mx]);
        await sendMessage(world, { to: `d@report.test` });
        await world.mta.runOnce();
      }
      await good.waitFor(4);
      await wrongName.waitFor(1);

      const worker = new TlsReportWorker(world.app.deps);
      assert.deepEqual(await worker.sendDue(), [], 'nothing is reported before the day is over');
      world.clock.advance(Date.parse(`${day}T00:00:00Z`) + 86_400_000 - world.clock.now()); // the next UTC day
      const results = await worker.sendDue();
      assert.equal(results.length, 2);
      assert.ok(results.every((r) => r.ok), JSON.stringify(results));

      assert.equal(rua.posts.length, 1);
      assert.equal(rua.posts[0].contentType, 'application/tlsrpt+gzip');
      const report = JSON.parse(gunzipSync(rua.posts[0].body).toString('utf8'));
      const validate = new Ajv({ allErrors: true }).compile(TLSRPT_SCHEMA);
      assert.ok(validate(report), JSON.stringify(validate.errors));
      assert.deepEqual(report['date-range'], { 'start-datetime': `${day}T00:00:00Z`, 'end-datetime': `${day}T23:59:59Z` });
      assert.equal(report['organization-name'], 'Pigeon Test');
      assert.equal(report.policies.length, 1);
      const [entry] = report.policies;
      assert.deepEqual(entry.policy, {
        'policy-type': 'sts', 'policy-domain': 'report.test', 'mx-host': ['*.report.test'],
        'policy-string': ['version: STSv1', 'mode: testing', 'mx: *.report.test', 'max_age: 86400'],
      });
      assert.deepEqual(entry.summary, { 'total-successful-session-count': 2, 'total-failure-session-count': 2 });
      const details = [...entry['failure-details']].sort((x, y) => x['result-type'].localeCompare(y['result-type']));
      assert.deepEqual(details, [
        { 'result-type': 'certificate-host-mismatch', 'sending-mta-ip': '127.0.0.1', 'receiving-mx-hostname': 'mx2.report.test', 'failed-session-count': 1 },
        { 'result-type': 'validation-failure', 'sending-mta-ip': '127.0.0.1', 'receiving-mx-hostname': 'mx.elsewhere.test', 'failed-session-count': 1 },
      ]);

      const mailed = good.messages.find((m) => m.rcptTo[0] === 'tlsrpt@reports.test');
      assert.ok(mailed, 'the mailto: report arrived');
      assert.equal(mailed.mailFrom, 'tlsrpt-noreply@mta.pigeon.test');
      const parsed = await simpleParser(mailed.raw);
      assert.match(mailed.raw.toString(), /^Content-Type: multipart\/report; report-type="tlsrpt"/m);
      assert.equal(parsed.headers.get('tls-report-domain'), 'report.test');
      assert.match(String(parsed.subject), /^Report Domain: report\.test Submitter: mta\.pigeon\.test Report-ID: </);
      const attachment = parsed.attachments.find((a) => a.contentType === 'application/tlsrpt+gzip');
      assert.ok(attachment);
      assert.match(String(attachment.filename), /^mta\.pigeon\.test!report\.test!\d{10}!\d{10}![0-9a-f]{12}\.json\.gz$/);
      assert.equal(JSON.parse(gunzipSync(attachment.content).toString('utf8'))['report-id'], report['report-id']);

      assert.equal((await world.app.db('tls_report_counts')).length, 0, 'reported counts are removed');
      assert.deepEqual(await worker.sendDue(), [], 'a report goes out once');
    } finally {
      await world.stop();
      await Promise.all([good.close(), wrongName.close(), sts.close(), rua.close()]);
      ca.remove();
    }
  });
});
