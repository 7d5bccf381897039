/**
 * The C tools of `npm run bench compare` (Debian packages postfix and wrk,
 * which the test suite never needs): a counting smtp-sink, a throwaway Postfix
 * instance relaying to it, smtp-source and wrk runs, and the machine's CPU
 * busy share from /proc/stat. Loopback only.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

// postfix, smtp-source and smtp-sink live in /usr/sbin, which a non-root PATH may lack; the spawns below use this PATH.
process.env.PATH = [...new Set([...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/sbin'])].filter(Boolean).join(':');

/** The tools that are missing from PATH (empty when all are there). */
export function missingTools(names: string[]): string[] {
  const dirs = (process.env.PATH ?? '').split(':');
  return names.filter((n) => !dirs.some((d) => fs.existsSync(path.join(d, n))));
}

/** A free loopback port for a tool that cannot be given port 0 (smtp-sink, Postfix). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Jiffies busy and idle since boot, all CPUs: busy share = Δbusy / (Δbusy + Δidle). */
function cpuTimes(): { busy: number; idle: number } {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { busy: f[0] + f[1] + f[2] + f[5] + f[6], idle: f[3] + f[4] };
}

export function cpuMeter(): () => number {
  const a = cpuTimes();
  return () => {
    const b = cpuTimes();
    return (100 * (b.busy - a.busy)) / Math.max(1, b.busy - a.busy + b.idle - a.idle);
  };
}

export const loadAverage = (): string => os.loadavg().map((l) => l.toFixed(2)).join(' ');

export interface CountingSink {
  port: number;
  /** messages received since the sink started */
  count(): number;
  /** Resolves when count() reaches n, or when it has not moved for idleMs; returns the count. */
  waitFor(n: number, idleMs: number): Promise<number>;
  stop(): Promise<void>;
}

/** smtp-sink (C) counting on 127.0.0.1: cheap enough to stay out of the measurement. */
export async function startCountingSink(): Promise<CountingSink> {
  const port = await freePort();
  const child = spawn('smtp-sink', ['-u', 'nobody', '-c', '-m', '1000', `127.0.0.1:${port}`, '1024'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let received = 0;
  child.stdout.on('data', (chunk: Buffer) => {
    const all = [...chunk.toString('latin1').matchAll(/mesg=(\d+)/g)];
    if (all.length) received = Number(all[all.length - 1][1]);
  });
  await waitForPort(port);
  return {
    port,
    count: () => received,
    async waitFor(n, idleMs) {
      let last = received;
      let lastMove = Date.now();
      while (received < n && Date.now() - lastMove < idleMs) {
        await sleep(50);
        if (received !== last) [last, lastMove] = [received, Date.now()];
      }
      return received;
    },
    stop: () => kill(child),
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port}`);
    await sleep(100);
  }
}

function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

export interface Postfix {
  port: number;
  stop(): void;
}

// The daemons a relay-only Postfix needs (master.cf); smtpd listens on the loopback port we chose.
const SERVICES = [
  'pickup unix n - n 60 1 pickup', 'cleanup unix n - n - 0 cleanup', 'qmgr unix n - n 300 1 qmgr',
  'rewrite unix - - n - - trivial-rewrite', 'bounce unix - - n - 0 bounce', 'defer unix - - n - 0 bounce',
  'trace unix - - n - 0 bounce', 'verify unix - - n - 1 verify', 'flush unix n - n 1000? 0 flush',
  'proxymap unix - - n - - proxymap', 'proxywrite unix - - n - 1 proxymap', 'smtp unix - - n - - smtp',
  'relay unix - - n - - smtp', 'showq unix n - n - - showq', 'error unix - - n - - error', 'retry unix - - n - - error',
  'discard unix - - n - - discard', 'local unix - n n - - local', 'anvil unix - - n - 1 anvil',
  'scache unix - - n - 1 scache', 'postlog unix-dgram n - n - 1 postlogd',
];

/**
 * A fresh throwaway Postfix (its own config, queue and data directories under
 * a temporary dir) accepting on 127.0.0.1 and relaying everything to
 * [127.0.0.1]:relayPort; no TLS, no DKIM. paused: the queue manager defers
 * every message (accept path alone, as Pigeon with its MTA stopped).
 */
export async function startPostfix(relayPort: number, paused = false): Promise<Postfix> {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-postfix-'));
  fs.chmodSync(base, 0o755); // the postfix user's daemons must reach their directories
  for (const d of ['etc', 'spool', 'data']) fs.mkdirSync(path.join(base, d));
  spawnSync('chown', ['postfix', path.join(base, 'data')]);
  const port = await freePort();
  const main = {
    compatibility_level: '3.6', queue_directory: `${base}/spool`, data_directory: `${base}/data`, mail_owner: 'postfix',
    setgid_group: 'postdrop', myhostname: 'relay.bench.test', mydomain: 'bench.test', myorigin: '$myhostname',
    mydestination: '', local_recipient_maps: '', relay_domains: '', alias_maps: '', alias_database: '',
    inet_interfaces: '127.0.0.1', inet_protocols: 'ipv4', mynetworks: '127.0.0.0/8',
    smtpd_relay_restrictions: 'permit_mynetworks, reject_unauth_destination', relayhost: `[127.0.0.1]:${relayPort}`,
    maillog_file_prefixes: `/var, /dev/stdout, ${base}`, maillog_file: `${base}/maillog`, smtputf8_enable: 'no', biff: 'no',
    append_dot_mydomain: 'no', ...(paused ? { defer_transports: 'relay, smtp' } : {}),
  };
  fs.writeFileSync(path.join(base, 'etc/main.cf'), Object.entries(main).map(([k, v]) => `${k} = ${v}`).join('\n') + '\n');
  fs.writeFileSync(path.join(base, 'etc/master.cf'), [`127.0.0.1:${port} inet n - n - - smtpd`, ...SERVICES].join('\n') + '\n');
  const started = spawnSync('postfix', ['-c', `${base}/etc`, 'start'], { encoding: 'utf8' });
  if (started.status !== 0) throw new Error(`postfix start failed: see ${base}/maillog`);
  await waitForPort(port);
  return {
    port,
    stop() {
      spawnSync('postfix', ['-c', `${base}/etc`, 'stop'], { encoding: 'utf8' });
      fs.rmSync(base, { recursive: true, force: true });
    },
  };
}

/**
 * smtp-source: n messages of `size` bytes over `sessions` connections (reused); resolves with the seconds it took.
 * `from` is the envelope sender and the From header (Pigeon wants a verified domain there).
 */
export function smtpSource(port: number, sessions: number, n: number, size: number, from = 'from@bench.test'): Promise<number> {
  const args = ['-d', '-s', String(sessions), '-l', String(size), '-m', String(n), '-f', from, '-t', 'rcpt@sink.test', '-M', 'client.bench.test', `127.0.0.1:${port}`];
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn('smtp-source', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.once('exit', (code) => (code === 0 ? resolve((performance.now() - started) / 1000) : reject(new Error(`smtp-source exited ${code}: ${err}`))));
  });
}

export interface WrkResult {
  requests: number;
  non2xx: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
}

const toMs = (v: string): number => {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(v.trim());
  if (!m) return NaN;
  return Number(m[1]) * { us: 0.001, ms: 1, s: 1000, m: 60_000 }[m[2] as 'us' | 'ms' | 's' | 'm'];
};

/** wrk (one thread) driving `connections` keep-alive connections for `seconds` with a Lua script. */
export function wrk(url: string, script: string, connections: number, seconds: number, env: Record<string, string>): Promise<WrkResult> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url];
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => {
      const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
      if (code !== 0 || !Number.isFinite(requests)) return reject(new Error(`wrk exited ${code}: ${out}`));
      resolve({
        requests,
        non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
        seconds: (performance.now() - started) / 1000,
        p50Ms: toMs(/\s50%\s+(\S+)/.exec(out)?.[1] ?? ''),
        p99Ms: toMs(/\s99%\s+(\S+)/.exec(out)?.[1] ?? ''),
      });
    });
  });
}

/** The wrk script: POST /v1/messages/send, one new recipient at sink.test per request, ~size bytes of text. */
export function writeSendScript(dir: string, from: string, size: number): string {
  const file = path.join(dir, 'send.lua');
  // "\\\\n" here is \\n in Lua's source, which is \n (a JSON newline escape) in the request body
  const line = 'Your order has shipped and will arrive within two working days. Thank you!';
  const text = `${line}\\\\n`.repeat(Math.ceil(size / (line.length + 1)));
  fs.writeFileSync(
    file,
    `local key = os.getenv("KEY")
local n = 0
request = function()
  n = n + 1
  local body = '{"from":"${from}","to":["rcpt' .. n .. '@sink.test"],"subject":"bench ' .. n .. '","text":"${text}"}'
  return wrk.format("POST", "/v1/messages/send", {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. key}, body)
end
`,
  );
  return file;
}
