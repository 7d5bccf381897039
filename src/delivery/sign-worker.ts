/**
 * A worker thread that signs for the MTA (see signer.ts). It answers with the
 * DKIM-Signature lines only; the main thread prepends them to the bytes it
 * already holds.
 */
import { parentPort } from 'node:worker_threads';
import { makeSignatures } from './dkim';
import type { SignAnswer, SignRequest } from './signer';
import { lowerThisThreadPriority } from '../util/thread-priority';

lowerThisThreadPriority(); // signing yields to the main thread (thread-priority.ts)

// One message per turn of the main thread's event loop, carrying that turn's requests; one answer for them all.
parentPort?.on('message', (batch: SignRequest[]) => {
  const answers: SignAnswer[] = batch.map((req) => {
    const raw = Buffer.from(req.raw.buffer, req.raw.byteOffset, req.raw.byteLength);
    return { id: req.id, made: makeSignatures(raw, req.key, req.now) };
  });
  parentPort?.postMessage(answers);
});
