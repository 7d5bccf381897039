/**
 * A worker thread that signs for the MTA (see signer.ts). It answers with the
 * DKIM-Signature lines only; the main thread prepends them to the bytes it
 * already holds.
 */
import { parentPort } from 'node:worker_threads';
import { makeSignatures, type SigningKey } from './dkim';

interface Request {
  id: number;
  raw: Uint8Array;
  key: SigningKey;
  now: number;
}

parentPort?.on('message', (req: Request) => {
  const raw = Buffer.from(req.raw.buffer, req.raw.byteOffset, req.raw.byteLength);
  parentPort?.postMessage({ id: req.id, made: makeSignatures(raw, req.key, req.now) });
});
