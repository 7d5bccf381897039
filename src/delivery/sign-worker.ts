/**
 * A worker thread that signs for the MTA (see signer.ts): DKIM is most of the
 * CPU a message costs on its way out, and the main thread also serves the API.
 */
import { parentPort } from 'node:worker_threads';
import { signMessage, type SigningKey } from './dkim';

interface Request {
  id: number;
  raw: Uint8Array;
  key: SigningKey;
  now: number;
}

parentPort?.on('message', (req: Request) => {
  const raw = Buffer.from(req.raw.buffer, req.raw.byteOffset, req.raw.byteLength);
  signMessage(raw, req.key, req.now).then(
    (result) => parentPort?.postMessage({ id: req.id, result }),
    (err: Error) => parentPort?.postMessage({ id: req.id, result: { error: err.message } }),
  );
});
