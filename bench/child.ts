/**
 * The benchmarks' servers run in child processes (so the load generator does
 * not share their event loop). This is the one IPC helper they share: fork a
 * bench server script, wait for its `ready`, ask it for `stats`, stop it.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export interface ServerStats {
  maxRssKb: number;
  cpuMs: number;
  /** the shared writer's time in transactions so far (servers that run an app) */
  writerBusyMs?: number;
  /** the shared writer's transactions committed so far (messages ÷ commits: how much each commit carries) */
  writerCommits?: number;
  /** time the main thread's event loop was not idle so far (performance.eventLoopUtilization): near wall time, it is the limit */
  mainThreadBusyMs?: number;
}

export interface BenchChild<Ready> {
  child: ChildProcess;
  ready: Ready;
  stats(): Promise<ServerStats>;
  /** Asks the server to close cleanly and resolves when it has exited. */
  stop(): Promise<void>;
}

/** The flags `npm start`, the systemd units and the Docker image give Node, so the bench measures what runs. */
export const PRODUCTION_NODE_FLAGS = ['--max-semi-space-size=32'];

export async function forkBenchServer<Ready>(script: string, args: string[], stdout: 'inherit' | 'ignore'): Promise<BenchChild<Ready>> {
  // PIGEON_BENCH_PROFILE=dir writes a CPU profile of each server process there; PIGEON_BENCH_NODE_FLAGS adds
  // flags of its own (space-separated: a V8 option to try, `-r probe.js` to measure inside the server).
  const profile = process.env.PIGEON_BENCH_PROFILE;
  const extra = process.env.PIGEON_BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
  // A profiled server also counts the requests it serves (count-requests.ts), for profile-compare.ts.
  const profiling = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`, '-r', path.join(__dirname, 'count-requests.js')] : [];
  const execArgv = [...PRODUCTION_NODE_FLAGS, ...extra, ...profiling];
  const child = fork(path.join(__dirname, script), args, { stdio: ['ignore', stdout, 'inherit', 'ipc'], execArgv });
  const next = <T>(type: string) =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`bench server exited with ${code}`));
      const onMessage = (m: { type: string }) => {
        if (m.type !== type) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m as T);
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const ready = await next<Ready>('ready');
  return {
    child,
    ready,
    stats() {
      const answer = next<ServerStats>('stats');
      child.send({ type: 'stats' });
      return answer;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.send({ type: 'stop' });
      }),
  };
}

/**
 * The server side of the same protocol: answers `stats` with this process's CPU time and peak RSS, and on `stop`
 * closes the app, runs `cleanup` (e.g. removes a temporary dataDir) and exits.
 */
export function answerBenchParent(app: { close(): Promise<void>; deps?: { writer: { busyTimeMs: number; commitCount: number } } }, cleanup: () => void = () => undefined): void {
  process.on('message', async (msg: { type: string }) => {
    if (msg.type === 'stats') {
      const cpu = process.cpuUsage();
      const stats: ServerStats = { maxRssKb: process.resourceUsage().maxRSS, cpuMs: (cpu.user + cpu.system) / 1000, writerBusyMs: app.deps?.writer.busyTimeMs, writerCommits: app.deps?.writer.commitCount,
        mainThreadBusyMs: performance.eventLoopUtilization().active };
      process.send?.({ type: 'stats', ...stats });
    }
    if (msg.type === 'stop') {
      await app.close();
      cleanup();
      process.exit(0);
    }
  });
}
