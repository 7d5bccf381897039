/**
 * DKIM signing threads run below the main thread's priority. The main thread
 * is the one serial path of the process: the API, SMTP sessions, the MTA's
 * sockets and every hop of the writer's transactions wait on it, while
 * signing is parallel work that gains nothing from running before it. On a
 * machine whose cores are all busy, a signing thread that shares the CPU
 * equally with the main thread stretches each of the writer's hops; at a
 * lower priority it runs on what the main thread leaves. Measured end to end
 * on 2 cores: about +10 % msg/s at the same CPU per message.
 *
 * Only for work nothing waits on by the clock: against each busy thread of
 * normal priority (the main thread, the SQLite driver's threads, any other
 * process) a thread 10 levels down gets about a tenth of a core. Signing has
 * no timeout (it slows deliveries, whose number in flight is bounded); the
 * template compiles keep their priority, as a request and a wall-clock
 * timeout wait on them. A thread inherits the nice value of the thread that
 * creates it: a lowered thread must not be the first to use libuv's pool
 * (async fs, crypto, zlib), or the whole pool, SQLite included, would start
 * lowered. Signing is synchronous, and the main thread opens the database
 * before anything is signed.
 */
import os from 'node:os';

/** Niceness a helper thread adds to the process's own (at nice 10 below, it weighs 110 against the main thread's 1024 for a core). */
export const HELPER_THREAD_NICE = 10;
const LOWEST = 19;

/**
 * Lowers the calling thread's priority by `by` nice levels (to 19 at most). Only on Linux, where a nice
 * value belongs to a thread (NPTL) and pid 0 means the calling one; elsewhere it would lower the whole
 * process. Raising niceness needs no privilege; a refusal (a sandbox that forbids setpriority) leaves the
 * thread as it was.
 */
export function lowerThisThreadPriority(by = HELPER_THREAD_NICE): void {
  if (process.platform !== 'linux') return;
  try {
    // relative to what the thread inherited (systemd's Nice=, say), so the main thread stays ahead by the same
    os.setPriority(0, Math.min(LOWEST, os.getPriority(0) + by));
  } catch {
    // the thread keeps its priority: slower under contention, never wrong
  }
}
