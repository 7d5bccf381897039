/**
 * A worker thread that builds MIME for mime-pool.ts. Each message is answered
 * as soon as it is built, so a small one is not held up by a large one asked
 * beside it; the answers done in one turn of this thread travel together. An
 * answer's bytes are handed over, not copied, when they own their memory (a
 * pooled small Buffer shares its slab with others, so it is copied).
 */
import { parentPort, type TransferListItem } from 'node:worker_threads';
import { composeMime } from './mime';
import type { MimeAnswer, MimeRequest } from './mime-pool';

let done: MimeAnswer[] = [];

function send(): void {
  const answers = done;
  done = [];
  const transfer: TransferListItem[] = [];
  for (const a of answers) {
    if (!('raw' in a)) continue;
    const memory = a.raw.buffer;
    if (memory instanceof ArrayBuffer && a.raw.byteOffset === 0 && a.raw.byteLength === memory.byteLength) transfer.push(memory);
  }
  parentPort?.postMessage(answers, transfer);
}

function answer(a: MimeAnswer): void {
  if (done.push(a) === 1) setImmediate(send);
}

parentPort?.on('message', (batch: MimeRequest[]) => {
  for (const { id, input } of batch) {
    // Attachment bytes arrive as plain Uint8Arrays, which the composer encodes as it does Buffers (attachments
    // always go base64; the test compares the bytes with the main thread's).
    composeMime(input).then(
      (raw) => answer({ id, raw }),
      (err: unknown) => answer({ id, error: String((err as Error)?.message ?? err) }),
    );
  }
});
