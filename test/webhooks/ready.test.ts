// The dispatcher's ready queue: a delivery claimed again (its lease lapsed while it waited) is queued once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ReadyQueue } from '../../src/webhooks/ready';
import type { Job } from '../../src/webhooks/jobs';

const job = (id: string, webhookId = 'wh_1'): Job => ({
  delivery: { id, webhookId } as Job['delivery'],
  webhook: { id: webhookId, enabled: true } as Job['webhook'],
  body: '{}',
});

describe('ready queue', () => {
  it('a delivery claimed again while it still waits in the queue is not queued twice (it would be sent twice)', () => {
    const ready = new ReadyQueue();
    ready.add([job('d1'), job('d2')], 0);
    ready.add([job('d1'), job('d3')], 1);
    assert.equal(ready.size, 3);
    assert.deepEqual(ready.take('wh_1', 10).map((j) => j.delivery.id), ['d1', 'd2', 'd3']);
  });

  it('a delivery claimed again while its request is in flight is not queued', () => {
    const ready = new ReadyQueue();
    const inFlight = new Set(['d1']);
    ready.add([job('d1'), job('d2')], 0, (id) => inFlight.has(id));
    assert.deepEqual(ready.take('wh_1', 10).map((j) => j.delivery.id), ['d2']);
  });

  it('once taken or dropped, the same delivery may be queued again (a later retry)', () => {
    const ready = new ReadyQueue();
    ready.add([job('d1')], 0);
    ready.take('wh_1', 1);
    ready.add([job('d1')], 1);
    assert.deepEqual(ready.drop('wh_1'), ['d1']);
    ready.add([job('d1')], 2);
    assert.equal(ready.size, 1);
  });
});
