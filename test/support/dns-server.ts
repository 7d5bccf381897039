/*
 * A real DNS server on loopback, so that code under test resolves MX, TXT and A
 * records through the resolver it uses in production (`dns.servers` in config),
 * against a zone the test declares. UDP and TCP share one port, as resolvers expect:
 * an answer too big for the client's UDP buffer goes out truncated (TC) and the
 * client retries over TCP.
 *
 * Authoritative for every name: a name missing from the zone is NXDOMAIN, a name
 * without records of the asked type is NODATA.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import dnsPacket from 'dns-packet';

export type RecordSpec =
  | { type: 'A' | 'AAAA' | 'CNAME' | 'PTR'; data: string; ttl?: number }
  /** exchange '.' with preference 0 is a null MX (RFC 7505) */
  | { type: 'MX'; data: { preference: number; exchange: string }; ttl?: number }
  /** an array is one TXT record made of several character-strings */
  | { type: 'TXT'; data: string | string[]; ttl?: number };

export type ZoneEntry =
  | RecordSpec[]
  | 'NXDOMAIN'
  | 'SERVFAIL'
  /** answer only after delayMs (a large delay means "never answers in time") */
  | { delayMs: number; records: RecordSpec[] };

export interface Zone {
  [name: string]: ZoneEntry;
}

export interface DnsQuery {
  name: string;
  type: string;
  transport: 'udp' | 'tcp';
}

export interface TestDnsServer {
  /** '127.0.0.1:PORT', the form `dns.servers` and `Resolver#setServers` take */
  address: string;
  host: string;
  port: number;
  /** replaces everything served for name */
  set(name: string, entry: ZoneEntry): void;
  remove(name: string): void;
  clear(): void;
  /** every question received, in order */
  queries: DnsQuery[];
  close(): Promise<void>;
}

/** TTL when a record names none: 0, so a cache in the code under test never outlives a zone change. */
const DEFAULT_TTL = 0;
const RCODE = { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3 } as const;
const MAX_CNAME_CHAIN = 8;

const normalize = (name: string): string => name.toLowerCase().replace(/\.+$/, '');

export async function startDnsServer(initial: Zone = {}): Promise<TestDnsServer> {
  const zone = new Map<string, ZoneEntry>();
  for (const [name, entry] of Object.entries(initial)) zone.set(normalize(name), entry);
  const queries: DnsQuery[] = [];
  const timers = new Set<NodeJS.Timeout>();

  const answer: Answerer = (query, transport, send) => {
    const question = query.questions?.[0];
    if (!question) return;
    queries.push({ name: normalize(question.name), type: question.type, transport });
    const entry = zone.get(normalize(question.name));
    const response = buildResponse(zone, query, question);
    const delayMs = entry && typeof entry === 'object' && !Array.isArray(entry) ? entry.delayMs : 0;
    if (delayMs <= 0) return send(response);
    const timer = setTimeout(() => {
      timers.delete(timer);
      send(response);
    }, delayMs);
    timers.add(timer);
  };

  const { udp, tcp, port } = await bindSamePort('127.0.0.1');
  serveUdp(udp, answer);
  const sockets = serveTcp(tcp, answer);

  return {
    address: `127.0.0.1:${port}`,
    host: '127.0.0.1',
    port,
    set: (name, entry) => void zone.set(normalize(name), entry),
    remove: (name) => void zone.delete(normalize(name)),
    clear: () => zone.clear(),
    queries,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const socket of sockets) socket.destroy();
      await Promise.all([new Promise<void>((resolve) => udp.close(() => resolve())), new Promise<void>((resolve) => tcp.close(() => resolve()))]);
    },
  };
}

type Answerer = (query: dnsPacket.DecodedPacket, transport: DnsQuery['transport'], send: (response: dnsPacket.Packet) => void) => void;

function serveUdp(udp: dgram.Socket, answer: Answerer): void {
  udp.on('message', (msg, rinfo) => {
    const query = decodeOrNull(msg);
    if (!query) return;
    answer(query, 'udp', (response) => {
      let buf = dnsPacket.encode(response);
      if (buf.length > udpPayloadLimit(query)) {
        // too big for UDP: send the question only, with TC set, so the client retries over TCP
        buf = dnsPacket.encode({ ...response, flags: (response.flags ?? 0) | dnsPacket.TRUNCATED_RESPONSE, answers: [], authorities: [] });
      }
      udp.send(buf, rinfo.port, rinfo.address);
    });
  });
}

/** Returns the open connections, for close() to destroy. */
function serveTcp(tcp: net.Server, answer: Answerer): Set<net.Socket> {
  const sockets = new Set<net.Socket>();
  tcp.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      // each message is prefixed with its 2-byte length (RFC 1035 §4.2.2)
      while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
        const length = pending.readUInt16BE(0);
        const query = decodeOrNull(pending.subarray(2, 2 + length));
        pending = pending.subarray(2 + length);
        if (!query) return void socket.destroy();
        answer(query, 'tcp', (response) => {
          if (!socket.destroyed) socket.write(dnsPacket.streamEncode(response));
        });
      }
    });
  });
  return sockets;
}

function buildResponse(zone: Map<string, ZoneEntry>, query: dnsPacket.DecodedPacket, question: dnsPacket.Question): dnsPacket.Packet {
  const answers: dnsPacket.Answer[] = [];
  let rcode: number = RCODE.NOERROR;
  let name = normalize(question.name);
  let owner = question.name; // answers carry the name as asked (resolvers may randomise its case)
  const qtype: string = question.type; // 'ANY' is missing from the dns-packet types

  for (let hop = 0; hop <= MAX_CNAME_CHAIN; hop++) {
    const entry = zone.get(name);
    if (entry === 'SERVFAIL') {
      rcode = RCODE.SERVFAIL;
      break;
    }
    if (entry === undefined || entry === 'NXDOMAIN') {
      // a name that only has names below it (like _domainkey.example.com) exists
      rcode = entry === undefined && hasDescendant(zone, name) ? RCODE.NOERROR : RCODE.NXDOMAIN;
      break;
    }
    const records = Array.isArray(entry) ? entry : entry.records;
    const cname = records.find((r): r is RecordSpec & { type: 'CNAME' } => r.type === 'CNAME');
    if (cname && qtype !== 'CNAME' && qtype !== 'ANY') {
      answers.push(toAnswer(owner, cname));
      owner = name = normalize(cname.data);
      continue;
    }
    for (const record of records) {
      if (qtype === 'ANY' || record.type === qtype) answers.push(toAnswer(owner, record));
    }
    break;
  }

  const rd = query.flag_rd ? dnsPacket.RECURSION_DESIRED : 0;
  return {
    type: 'response',
    id: query.id,
    flags: dnsPacket.AUTHORITATIVE_ANSWER | rd | rcode,
    questions: [question],
    answers,
    authorities: answers.length === 0 && rcode !== RCODE.SERVFAIL ? [soaFor(name)] : [],
  };
}

function toAnswer(name: string, record: RecordSpec): dnsPacket.Answer {
  const ttl = record.ttl ?? DEFAULT_TTL;
  switch (record.type) {
    case 'MX':
      return { name, type: 'MX', ttl, data: { preference: record.data.preference, exchange: normalize(record.data.exchange) } };
    case 'TXT':
      // a copy: dns-packet turns the strings of the array it encodes into Buffers, in place
      return { name, type: 'TXT', ttl, data: Array.isArray(record.data) ? [...record.data] : [record.data] };
    default:
      return { name, type: record.type, ttl, data: record.type === 'A' || record.type === 'AAAA' ? record.data : normalize(record.data) };
  }
}

/** Negative answers carry an SOA (RFC 2308); its TTL 0 means "do not cache this". */
function soaFor(name: string): dnsPacket.Answer {
  const apex = name.split('.').slice(-2).join('.') || '.';
  return {
    name: apex,
    type: 'SOA',
    ttl: 0,
    data: { mname: `ns.${apex}`, rname: `hostmaster.${apex}`, serial: 1, refresh: 3600, retry: 600, expire: 86400, minimum: 0 },
  };
}

function hasDescendant(zone: Map<string, ZoneEntry>, name: string): boolean {
  for (const key of zone.keys()) if (key.endsWith(`.${name}`)) return true;
  return false;
}

function udpPayloadLimit(query: dnsPacket.DecodedPacket): number {
  const opt = query.additionals?.find((a): a is dnsPacket.OptAnswer => a.type === 'OPT');
  return Math.max(512, opt?.udpPayloadSize ?? 512);
}

function decodeOrNull(buf: Buffer): dnsPacket.DecodedPacket | null {
  try {
    const packet = dnsPacket.decode(buf);
    return packet.type === 'query' ? packet : null;
  } catch {
    return null;
  }
}

/** Binds UDP on an ephemeral port, then TCP on the same number; retries when TCP finds it taken. */
async function bindSamePort(host: string): Promise<{ udp: dgram.Socket; tcp: net.Server; port: number }> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const udp = dgram.createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(0, host, () => resolve());
    });
    const port = udp.address().port;
    const tcp = net.createServer();
    try {
      await new Promise<void>((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(port, host, () => resolve());
      });
      udp.on('error', () => {}); // a failed send to a vanished client is not our problem
      return { udp, tcp, port };
    } catch {
      await new Promise<void>((resolve) => udp.close(() => resolve()));
    }
  }
  throw new Error('could not bind UDP and TCP on the same loopback port');
}
