/**
 * The webhook sender thread (send-thread.ts): runs each attempt it is asked
 * for (attempt.ts: the SSRF guard, the signature, the POST) over its own
 * kept-alive connections, within the request limits (lane-gate.ts), and
 * answers with the outcome. The answers done in
 * one turn of this thread travel together; an abort stops that attempt's
 * request, which then answers as aborted.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { EndpointAgents } from './agents';
import { gatedAttempt, laneGate, type SenderData, type SendAnswer, type SendRequest } from './send-thread';

const data = workerData as SenderData;
const agents = new EndpointAgents(data.agents);
const gate = laneGate(data.config);
const inFlight = new Map<number, AbortController>();
let done: SendAnswer[] = [];

function send(): void {
  const answers = done;
  done = [];
  parentPort?.postMessage(answers);
}

function answer(a: SendAnswer): void {
  if (done.push(a) === 1) setImmediate(send);
}

function attempt({ id, lane, input }: Extract<SendRequest, { input: unknown }>): void {
  const controller = new AbortController();
  inFlight.set(id, controller);
  gatedAttempt(gate, data, agents, lane, { ...input, signal: controller.signal }).then(
    (outcome) => answer({ id, outcome }),
    (err: unknown) => answer({ id, error: String((err as Error)?.message ?? err) }),
  ).finally(() => inFlight.delete(id));
}

parentPort?.on('message', (batch: SendRequest[]) => {
  for (const request of batch) {
    if ('abort' in request) inFlight.get(request.abort)?.abort();
    else attempt(request);
  }
});
