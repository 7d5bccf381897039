// The request limits on the sender thread (src/webhooks/lane-gate.ts): per lane and in all, first come first
// served past lanes at their limit, and a waiting request that is aborted leaves without running.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LaneGate } from '../../src/webhooks/lane-gate';

/** A request that runs until released; `started` lists the ones that began. */
function harness(gate: LaneGate) {
  const started: string[] = [];
  const waited: string[] = [];
  const release = new Map<string, () => void>();
  const run = (lane: string, name: string, signal?: AbortSignal) => gate.run(lane, (didWait) => {
    started.push(name);
    if (didWait) waited.push(name);
    return new Promise<string>((resolve) => release.set(name, () => resolve(name)));
  }, () => `${name} aborted`, signal);
  const settle = () => new Promise((r) => setImmediate(r));
  return { started, waited, release: (name: string) => release.get(name)!(), run, settle };
}

test('at most perLane of a lane and total in all run; the next waiting request of a lane with room starts', async () => {
  const h = harness(new LaneGate(2, 3));
  const done = [h.run('a', 'a1'), h.run('a', 'a2'), h.run('a', 'a3'), h.run('b', 'b1'), h.run('b', 'b2'), h.run('c', 'c1')];
  assert.deepEqual(h.started, ['a1', 'a2', 'b1'], 'a3 waits for its lane, b2 and c1 for the total');
  h.release('a1');
  await h.settle();
  assert.deepEqual(h.started, ['a1', 'a2', 'b1', 'a3'], 'first come first served: a3 was waiting first');
  h.release('b1');
  await h.settle();
  assert.deepEqual(h.started.slice(4), ['b2']);
  for (const name of ['a2', 'a3', 'b2']) h.release(name);
  await h.settle();
  assert.deepEqual(h.started.slice(5), ['c1']);
  h.release('c1');
  assert.deepEqual(await Promise.all(done), ['a1', 'a2', 'a3', 'b1', 'b2', 'c1']);
  assert.deepEqual(h.waited, ['a3', 'b2', 'c1'], 'told which had to wait (their signing time moves on by the wait)');
});

test('a waiting request that is aborted leaves without running; a running one is not the gate\'s to stop', async () => {
  const h = harness(new LaneGate(1, 10));
  const first = h.run('a', 'a1');
  const controller = new AbortController();
  const second = h.run('a', 'a2', controller.signal);
  const third = h.run('a', 'a3');
  controller.abort();
  assert.equal(await second, 'a2 aborted');
  h.release('a1');
  await h.settle();
  assert.deepEqual(h.started, ['a1', 'a3']);
  h.release('a3');
  assert.deepEqual(await Promise.all([first, third]), ['a1', 'a3']);
  const already = new AbortController();
  already.abort();
  assert.equal(await h.run('c', 'c1', already.signal), 'c1 aborted', 'aborted before it was asked: not run, though it fits');
  const blocker = h.run('b', 'b1');
  assert.equal(await h.run('b', 'b2', already.signal), 'b2 aborted');
  h.release('b1');
  await blocker;
  assert.deepEqual(h.started, ['a1', 'a3', 'b1']);
});
