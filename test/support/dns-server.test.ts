// The test DNS server answers Node's own resolver (c-ares) the way a real authoritative server would.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Resolver } from 'node:dns/promises';
import dnsPacket from 'dns-packet';
import { startDnsServer, type TestDnsServer } from './dns-server';

describe('test DNS server', () => {
  let dns: TestDnsServer;
  let resolver: Resolver;

  before(async () => {
    dns = await startDnsServer({
      'example.test': [
        { type: 'A', data: '127.0.0.2' },
        { type: 'AAAA', data: '::1' },
        { type: 'MX', data: { preference: 20, exchange: 'mx2.example.test' } },
        { type: 'MX', data: { preference: 10, exchange: 'mx1.example.test.' } },
        { type: 'TXT', data: 'v=spf1 ip4:127.0.0.2 ~all' },
      ],
      'sel._domainkey.example.test': [{ type: 'TXT', data: ['v=DKIM1; k=rsa; ', 'p=AAAA', 'BBBB'] }],
      'www.example.test': [{ type: 'CNAME', data: 'example.test' }],
      '2.0.0.127.in-addr.arpa': [{ type: 'PTR', data: 'out1.pigeon.test' }],
      'null-mx.test': [{ type: 'MX', data: { preference: 0, exchange: '.' } }],
      'gone.test': 'NXDOMAIN',
      'broken.test': 'SERVFAIL',
      'slow.test': { delayMs: 60_000, records: [{ type: 'A', data: '127.0.0.9' }] },
    });
    resolver = new Resolver({ timeout: 500, tries: 1 });
    resolver.setServers([dns.address]);
  });
  after(() => dns.close());

  it('answers A and AAAA', async () => {
    assert.deepEqual(await resolver.resolve4('example.test'), ['127.0.0.2']);
    assert.deepEqual(await resolver.resolve6('EXAMPLE.test.'), ['::1']);
  });

  it('answers MX with preferences and a null MX as exchange ""', async () => {
    const mx = await resolver.resolveMx('example.test');
    assert.deepEqual(
      mx.sort((a, b) => a.priority - b.priority),
      [
        { exchange: 'mx1.example.test', priority: 10 },
        { exchange: 'mx2.example.test', priority: 20 },
      ],
    );
    assert.deepEqual(await resolver.resolveMx('null-mx.test'), [{ exchange: '', priority: 0 }]);
  });

  it('answers TXT, a split record arriving as its chunks', async () => {
    assert.deepEqual(await resolver.resolveTxt('example.test'), [['v=spf1 ip4:127.0.0.2 ~all']]);
    assert.deepEqual(await resolver.resolveTxt('sel._domainkey.example.test'), [['v=DKIM1; k=rsa; ', 'p=AAAA', 'BBBB']]);
  });

  it('answers PTR for a reverse lookup', async () => {
    assert.deepEqual(await resolver.reverse('127.0.0.2'), ['out1.pigeon.test']);
  });

  it('follows a CNAME within the zone', async () => {
    assert.deepEqual(await resolver.resolveCname('www.example.test'), ['example.test']);
    assert.deepEqual(await resolver.resolve4('www.example.test'), ['127.0.0.2']);
  });

  it('says NXDOMAIN (ENOTFOUND) for unknown and NXDOMAIN names', async () => {
    await assert.rejects(resolver.resolve4('nowhere.test'), { code: 'ENOTFOUND' });
    await assert.rejects(resolver.resolveMx('gone.test'), { code: 'ENOTFOUND' });
  });

  it('says NODATA (ENODATA) for a known name without the asked type, and for an empty non-terminal', async () => {
    await assert.rejects(resolver.resolveMx('sel._domainkey.example.test'), { code: 'ENODATA' });
    await assert.rejects(resolver.resolveTxt('_domainkey.example.test'), { code: 'ENODATA' });
  });

  it('says SERVFAIL (ESERVFAIL)', async () => {
    await assert.rejects(resolver.resolve4('broken.test'), { code: 'ESERVFAIL' });
  });

  it('lets a delayed name time out (ETIMEOUT)', async () => {
    const impatient = new Resolver({ timeout: 200, tries: 1 });
    impatient.setServers([dns.address]);
    await assert.rejects(impatient.resolve4('slow.test'), { code: 'ETIMEOUT' });
  });

  it('serves changes made with set, remove and clear, uncached', async () => {
    dns.set('late.test', [{ type: 'A', data: '127.0.0.5' }]);
    assert.deepEqual(await resolver.resolve4('late.test'), ['127.0.0.5']);
    dns.set('late.test', [{ type: 'A', data: '127.0.0.6' }]);
    assert.deepEqual(await resolver.resolve4('late.test'), ['127.0.0.6']);
    dns.remove('late.test');
    await assert.rejects(resolver.resolve4('late.test'), { code: 'ENOTFOUND' });
  });

  it('records the questions it was asked', async () => {
    await resolver.resolveMx('Example.Test');
    assert.deepEqual(dns.queries.at(-1), { name: 'example.test', type: 'MX', transport: 'udp' });
  });

  it('answers a raw query over TCP on the same port', async () => {
    const query = dnsPacket.streamEncode({ type: 'query', id: 4242, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: 'MX', name: 'example.test' }] });
    const response = await new Promise<dnsPacket.Packet>((resolve, reject) => {
      const socket = net.connect(dns.port, dns.host, () => socket.write(query));
      let buf = Buffer.alloc(0);
      socket.on('data', (chunk) => {
        buf = Buffer.concat([buf, chunk]);
        if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
          socket.end();
          resolve(dnsPacket.streamDecode(buf));
        }
      });
      socket.on('error', reject);
    });
    assert.equal(response.id, 4242);
    assert.equal((response as dnsPacket.DecodedPacket).flag_aa, true);
    assert.deepEqual(response.questions, [{ type: 'MX', name: 'example.test', class: 'IN' }]);
    assert.equal(response.answers?.length, 2);
    assert.equal(dns.queries.at(-1)?.transport, 'tcp');
  });

  it('truncates a big UDP answer so the resolver retries over TCP', async () => {
    const chunks = Array.from({ length: 12 }, (_, i) => String(i).padStart(250, 'x'));
    dns.set('big.test', [{ type: 'TXT', data: chunks }]);
    assert.deepEqual(await resolver.resolveTxt('big.test'), [chunks]);
    const transports = dns.queries.filter((q) => q.name === 'big.test').map((q) => q.transport);
    assert.deepEqual(transports, ['udp', 'tcp']);
  });
});
