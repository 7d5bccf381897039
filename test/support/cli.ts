/** Runs the real `pigeon` CLI (compiled) as a child process. */
import { spawn, spawnSync, ChildProcess } from 'node:child_process';
import path from 'node:path';

export const CLI = path.resolve(__dirname, '..', '..', 'src', 'cli.js');

export function runCli(args: string[], env: Record<string, string> = {}): { code: number | null; stdout: string; stderr: string } {
  const res = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

/**
 * The same, without blocking this process's event loop: use it between requests to a running server, where a
 * blocked loop misses the server closing an idle keep-alive socket and the next fetch fails on it.
 */
export function runCliAsync(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, timeout: 30_000 });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  /** The sandbox key printed on first start, if this start printed one. */
  bootstrapKey?: string;
  stderr(): string;
  stdout(): string;
  /** Sends the signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `pigeon serve` and resolves once it logged that it started and,
 * on a first start (`expectBanner`), printed the sandbox key banner.
 */
export function startServer(configFile: string, expectBanner = false): Promise<ServerProcess> {
  const child = spawn(process.execPath, [CLI, 'serve', '--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  exited.then(() => children.delete(child));
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${err}`)), 20_000);
    const check = () => {
      const started = /"http":"([^"]+)"/.exec(out);
      const key = /svc_test_[A-Za-z0-9]{40}/.exec(err)?.[0];
      if (!started || (expectBanner && !key)) return;
      clearTimeout(timer);
      resolve({
        child,
        url: `http://${started[1]}`,
        bootstrapKey: key,
        stderr: () => err,
        stdout: () => out,
        stop(signal = 'SIGTERM') {
          child.kill(signal);
          return exited;
        },
      });
    };
    child.stdout!.on('data', (d) => ((out += d), check()));
    child.stderr!.on('data', (d) => ((err += d), check()));
    exited.then((code) => reject(new Error(`server exited with ${code}: ${err}`)));
  });
}
