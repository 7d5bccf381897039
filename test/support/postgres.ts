/**
 * A throwaway PostgreSQL server for tests: Debian's `postgresql` binaries
 * (installed by .ci/run on a fresh machine), a data folder in a temp dir,
 * a free loopback port, fsync off (the data is thrown away). initdb and
 * postgres refuse to run as root, so as root they run as the `postgres` OS
 * user, which owns the folder.
 *
 * One server per test run: test/run.mjs starts it for the PostgreSQL pass and
 * hands its address to every test process in PIGEON_TEST_POSTGRES_URL; a
 * test process started alone (PIGEON_TEST_DATABASE=postgres without that
 * variable) starts its own and stops it at exit. Each test app gets a fresh
 * database (CREATE DATABASE … TEMPLATE template0), named after its dataDir
 * so a restart of the same app finds the same database.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface PostgresServer {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  adminUrl: string;
  stop(): void;
}

/** The newest installed server's bin folder, or undefined. */
export function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!fs.existsSync(root)) return undefined;
  const versions = fs.readdirSync(root).filter((v) => fs.existsSync(path.join(root, v, 'bin', 'postgres'))).sort((a, b) => Number(b) - Number(a));
  return versions.length ? path.join(root, versions[0], 'bin') : undefined;
}

const asRoot = process.getuid?.() === 0;

/** argv run as the postgres OS user when we are root (initdb and postgres refuse root). */
function asServerUser(argv: string[]): [string, string[]] {
  return asRoot ? ['runuser', ['-u', 'postgres', '--', ...argv]] : [argv[0], argv.slice(1)];
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Initialises a cluster in a temp folder and starts it on a free loopback port (a few tries on a port collision). */
export async function startPostgresServer(): Promise<PostgresServer> {
  const bin = postgresBin();
  if (!bin) throw new Error('PostgreSQL is not installed (apt-get install -y postgresql; .ci/run does it)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-pg-'));
  const data = path.join(dir, 'data');
  if (asRoot) spawnSync('chown', ['postgres:postgres', dir]);
  const [cmd, args] = asServerUser([path.join(bin, 'initdb'), '-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  const init = spawnSync(cmd, args, { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const [c, a] = asServerUser([path.join(bin, 'postgres'), '-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1',
      '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=300']);
    const child = spawn(c, a, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    let log = '';
    child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
    const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
    if (await ready(bin, port, child)) {
      child.unref();
      (child.stderr as unknown as { unref?(): void })?.unref?.();
      let stopped = false;
      const stop = () => {
        if (stopped) return;
        stopped = true;
        try {
          process.kill(-child.pid!, 'SIGQUIT'); // immediate shutdown of the whole process group
        } catch { /* already gone */ }
        fs.rmSync(dir, { recursive: true, force: true });
      };
      return { adminUrl, stop };
    }
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch { /* already gone */ }
    if (attempt >= 4) throw new Error(`postgres did not start: ${log}`);
  }
}

/** Polls pg_isready until the server answers, or its process exits (a port taken between our probe and its bind). */
async function ready(bin: string, port: number, child: import('node:child_process').ChildProcess): Promise<boolean> {
  let exited = false;
  child.once('exit', () => (exited = true));
  for (let i = 0; i < 300 && !exited; i++) {
    const r = spawnSync(path.join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-q']);
    if (r.status === 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

let own: Promise<PostgresServer> | undefined;

/** The run's server (PIGEON_TEST_POSTGRES_URL) or this process's own, started on first use and stopped at exit. */
export async function testPostgresAdminUrl(): Promise<string> {
  if (process.env.PIGEON_TEST_POSTGRES_URL) return process.env.PIGEON_TEST_POSTGRES_URL;
  own ??= startPostgresServer().then((server) => {
    process.once('exit', () => server.stop());
    return server;
  });
  const { adminUrl } = await own;
  process.env.PIGEON_TEST_POSTGRES_URL = adminUrl; // for testConfig, which is synchronous
  return adminUrl;
}

const created = new Set<string>();

/** A database for `dataDir` on the server at `adminUrl` (created once); returns its URL. */
export function databaseFor(adminUrl: string, dataDir: string): string {
  const name = `pigeon_${path.basename(dataDir).replace(/[^A-Za-z0-9]/g, '_').toLowerCase()}`.slice(0, 63);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  if (!created.has(name)) {
    const psql = path.join(postgresBin() ?? '/usr/bin', 'psql');
    const exists = spawnSync(psql, [adminUrl, '-tAc', `SELECT 1 FROM pg_database WHERE datname = '${name}'`], { encoding: 'utf8' });
    if (exists.stdout.trim() !== '1') {
      const r = spawnSync(psql, [adminUrl, '-qc', `CREATE DATABASE ${name} TEMPLATE template0`], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`CREATE DATABASE ${name} failed: ${r.stderr}`);
    }
    created.add(name);
  }
  return url.toString();
}
