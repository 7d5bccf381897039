/**
 * A worker thread that builds MIME for mime-pool.ts. It answers each batch
 * at once, in the order asked; an answer's bytes are handed over, not
 * copied, when they own their memory (a pooled small Buffer shares its
 * slab with others, so it is copied).
 */
import { parentPort, type TransferListItem } from 'node:worker_threads';
import { composeMime } from './mime';
import type { MimeAnswer, MimeRequest } from './mime-pool';

async function answer({ id, input }: MimeRequest): Promise<MimeAnswer> {
  try {
    // Attachment bytes arrive as plain Uint8Arrays, which the composer encodes as it does Buffers (attachments
    // always go base64; the test compares the bytes with the main thread's).
    return { id, raw: await composeMime(input) };
  } catch (err) {
    return { id, error: String((err as Error)?.message ?? err) };
  }
}

parentPort?.on('message', (batch: MimeRequest[]) => {
  void Promise.all(batch.map(answer)).then((answers) => {
    const transfer: TransferListItem[] = [];
    for (const a of answers) {
      if (!('raw' in a)) continue;
      const memory = a.raw.buffer;
      if (memory instanceof ArrayBuffer && a.raw.byteOffset === 0 && a.raw.byteLength === memory.byteLength) transfer.push(memory);
    }
    parentPort?.postMessage(answers, transfer);
  });
});
