/**
 * Reads the DATA of a submission and checks its line structure on the way.
 * smtp-server hands over the dot-unstuffed bytes; in them every line must end
 * in CRLF. A bare LF or a bare CR is refused outright: servers disagree on
 * whether `<LF>.<LF>` or `<CR>.<CR>` ends the data, and that disagreement is
 * what SMTP smuggling exploits to slip a second, unauthenticated message past
 * the first hop. Lines longer than 998 characters (RFC 5322 §2.1.1) are
 * refused too. The stream is always read to its end, so the server can reply;
 * after a fault nothing more is buffered.
 */
import type { Readable } from 'node:stream';

export type DataFault = 'bare_lf' | 'bare_cr' | 'line_too_long' | 'too_large';

export type DataResult = { raw: Buffer } | { fault: DataFault };

const CR = 0x0d;
const LF = 0x0a;
const MAX_LINE = 998;

const positionOr = (found: number, none: number) => (found < 0 ? none : found);

/**
 * Incremental line checker; keeps state across chunk boundaries. It jumps
 * from one CR or LF to the next with Buffer.indexOf (native) rather than
 * visiting every byte in JavaScript: it runs over every byte of every message.
 */
export class LineChecker {
  private afterCr = false;
  private lineLength = 0;
  fault: DataFault | null = null;

  push(chunk: Buffer): void {
    let i = 0;
    while (!this.fault && i < chunk.length) {
      if (this.afterCr) {
        if (chunk[i] !== LF) return void (this.fault = 'bare_cr');
        this.afterCr = false;
        this.lineLength = 0;
        i++;
        continue;
      }
      const end = Math.min(positionOr(chunk.indexOf(CR, i), chunk.length), positionOr(chunk.indexOf(LF, i), chunk.length));
      this.lineLength += end - i;
      if (this.lineLength > MAX_LINE) return void (this.fault = 'line_too_long');
      if (end === chunk.length) return;
      if (chunk[end] === LF) return void (this.fault = 'bare_lf');
      this.afterCr = true;
      i = end + 1;
    }
  }

  end(): DataFault | null {
    if (!this.fault && this.afterCr) this.fault = 'bare_cr';
    return this.fault;
  }
}

/** Collects the message unless it breaks a rule; rejects only when the stream fails (client gone). */
export function readData(stream: Readable & { sizeExceeded?: boolean }, maxBytes: number, checkLines: boolean): Promise<DataResult> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const lines = new LineChecker();
    let size = 0;
    let fault: DataFault | null = null;
    stream.on('data', (chunk: Buffer) => {
      if (fault) return;
      size += chunk.length;
      if (size > maxBytes || stream.sizeExceeded) {
        fault = 'too_large';
        chunks.length = 0;
        return;
      }
      if (checkLines) {
        lines.push(chunk);
        if (lines.fault) {
          fault = lines.fault;
          chunks.length = 0;
          return;
        }
      }
      chunks.push(chunk);
    });
    stream.once('error', reject);
    stream.once('end', () => {
      if (!fault && (stream.sizeExceeded || size > maxBytes)) fault = 'too_large';
      if (!fault && checkLines) fault = lines.end();
      resolve(fault ? { fault } : { raw: Buffer.concat(chunks, size) });
    });
  });
}
