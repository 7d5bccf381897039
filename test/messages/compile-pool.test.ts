/**
 * The template compile pool's bounds, on real worker threads: a compile that
 * runs too long is cut off and its thread replaced, one account cannot fill
 * the queue for the others, a full queue is refused at once, and closing
 * ends the threads. Limits are small here; the pool reads them at each
 * compile, so a test may change the timeout between compiles.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import { ApiError } from '../../src/http/errors';
import { CompilePool, CompileTimeout, PoolLimits } from '../../src/messages/compile-pool';
import { compileAll } from '../../src/messages/render';

const BOUNDS = { templateSourceBytes: 512 * 1024, templateNestingDepth: 24 };
let unique = 0;
/** About 1,000 parts and 200 KB: a few hundred milliseconds of compiling. */
const large = () => Array.from({ length: 999 }, (_, i) => `{{v${unique}_${i}}} ${'lorem ipsum '.repeat(16)}\n`).join('') + `run ${unique++}`;
const limits = (over: Partial<PoolLimits> = {}): PoolLimits => ({ threads: 1, maxQueued: 8, maxPerAccount: 8, timeoutMs: 30_000, ...over });

async function refusal(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (err) {
    return err;
  }
  assert.fail('expected a refusal');
}

test('a template compile that runs past the timeout is cut off with 422 too expensive, and the next compile gets a fresh thread', async () => {
  const bounds = limits({ timeoutMs: 1 });
  const pool = new CompilePool(bounds);
  try {
    const err = await refusal(() => pool.precompile({ field: 'html', source: large() }, 'acct'));
    assert.ok(err instanceof CompileTimeout, String(err));
    assert.equal(pool.liveThreads, 0, 'the thread that ran too long was dropped');

    const via = { pool, account: 'acct' };
    const viaRender = await refusal(() => compileAll({ subject: 'Hi', html: large() }, BOUNDS, via));
    assert.ok(viaRender instanceof ApiError);
    assert.deepEqual([viaRender.status, viaRender.code, viaRender.param], [422, 'template_error', 'html']);
    assert.match(viaRender.message, /too expensive to compile/);

    bounds.timeoutMs = 30_000;
    const spec = await pool.precompile({ field: 'text', source: 'Hello {{name}}' }, 'acct');
    assert.match(spec, /"main":function/);
    assert.equal(pool.liveThreads, 1, 'a new thread compiled it');
  } finally {
    await pool.stop();
  }
});

test('one account queueing many large templates gets 429 too_many_compiles while another account still compiles', async () => {
  const pool = new CompilePool(limits({ maxPerAccount: 2 }));
  try {
    const mine = [pool.precompile({ field: 'html', source: large() }, 'greedy'), pool.precompile({ field: 'html', source: large() }, 'greedy')];
    const err = await refusal(async () => pool.precompile({ field: 'html', source: large() }, 'greedy'));
    assert.ok(err instanceof ApiError);
    assert.deepEqual([err.status, err.type, err.code, err.headers?.['Retry-After']], [429, 'rate_limit_error', 'too_many_compiles', '1']);
    const theirs = await pool.precompile({ field: 'html', source: large() }, 'other');
    assert.match(theirs, /"main":function/);
    await Promise.all(mine);
    assert.match(await pool.precompile({ field: 'html', source: large() }, 'greedy'), /"main":function/, 'room again once done');
  } finally {
    await pool.stop();
  }
});

test('many accounts filling the compile queue: the next large template gets 503 compiler_busy at once', async () => {
  const pool = new CompilePool(limits({ maxQueued: 2 }));
  try {
    const accepted = [0, 1, 2].map((i) => pool.precompile({ field: 'html', source: large() }, `acct${i}`)); // one runs, two wait
    const err = await refusal(async () => pool.precompile({ field: 'html', source: large() }, 'acct3'));
    assert.ok(err instanceof ApiError);
    assert.deepEqual([err.status, err.type, err.code], [503, 'api_error', 'compiler_busy']);
    for (const spec of await Promise.all(accepted)) assert.match(spec, /"main":function/);
  } finally {
    await pool.stop();
  }
});

test('closing the pool ends its threads and refuses the compiles still waiting with 503 shutting_down', async () => {
  const pool = new CompilePool(limits({ threads: 2 }));
  const pending = [0, 1, 2].map(() => pool.precompile({ field: 'html', source: large() }, 'acct').catch((err: unknown) => err));
  assert.equal(pool.liveThreads, 2);
  await pool.stop();
  assert.equal(pool.liveThreads, 0);
  assert.equal(pool.open, false);
  for (const err of await Promise.all(pending)) {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.code, 'shutting_down');
  }
  const late = await refusal(async () => pool.precompile({ field: 'html', source: large() }, 'acct'));
  assert.ok(late instanceof ApiError && late.code === 'shutting_down', 'a closed pool starts no thread');
  assert.equal(pool.liveThreads, 0);
});

// A request waits on its compile, and the timeout is wall-clock: at a lower priority, other busy threads on the
// core would stretch a compile that takes a few hundred milliseconds past it, and a valid template would get 422.
test('compile threads keep the main thread\'s priority, so a busy machine cannot push a valid template past the timeout', { skip: process.platform !== 'linux' }, async () => {
  const before = new Set(threadIds());
  const pool = new CompilePool(limits());
  try {
    await pool.precompile({ field: 'html', source: large() }, 'acct');
    const started = threadIds().filter((tid) => !before.has(tid));
    assert.ok(started.length > 0, 'the compile ran on a thread of its own');
    for (const tid of started) assert.equal(threadNice(tid), os.getPriority(0), `thread ${tid}`);
  } finally {
    await pool.stop();
  }
});

const threadIds = () => fs.readdirSync('/proc/self/task').map(Number);
/** The thread's nice value: the 19th field of /proc/self/task/<tid>/stat. */
function threadNice(tid: number): number {
  const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}
