/** `pigeon serve` as a child process (crash tests: a process that can be killed with SIGKILL). */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const CLI = path.resolve(__dirname, '..', '..', 'src', 'cli.js');

export interface Serving {
  child: ChildProcess;
  url: string;
  bootstrapKey?: string;
  exited: Promise<void>;
}

/** Starts `pigeon serve`, waits for its "started" log line and returns its URL (and the first-start key, from stderr). */
export function serve(configFile: string, firstStart = false): Promise<Serving> {
  const child = spawn(process.execPath, [CLI, 'serve', '--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stdout = '';
  let stderr = '';
  return new Promise((resolve, reject) => {
    const check = () => {
      const started = /"http":"([^"]+)","listeners".*"msg":"pigeon started"/.exec(stdout);
      const key = /svc_test_\w+/.exec(stderr)?.[0];
      if (!started || (firstStart && !key)) return;
      child.stdout?.removeAllListeners('data');
      child.stdout?.resume(); // keep draining the log
      resolve({ child, url: `http://${started[1]}`, bootstrapKey: key, exited });
    };
    child.stdout?.on('data', (c: Buffer) => ((stdout += c.toString()), check()));
    child.stderr?.on('data', (c: Buffer) => ((stderr += c.toString()), check()));
    child.once('exit', (code) => reject(new Error(`pigeon serve exited with ${code}: ${stderr}`)));
  });
}
