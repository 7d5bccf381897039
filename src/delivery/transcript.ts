/**
 * The SMTP conversation of one delivery attempt, as the console shows it:
 * "C: " lines we sent, "S: " lines the server answered, "*** " notes for what
 * happened locally (timeouts, resets). The message itself is never in it:
 * nodemailer's transaction log (the `transactionLog` option, without `debug`)
 * names the body only by its size. Bounded at TRANSCRIPT_MAX_BYTES: past it,
 * one line says what was cut.
 */
import { format } from 'node:util';

export const TRANSCRIPT_MAX_BYTES = 16 * 1024;

export class Transcript {
  private readonly lines: string[] = [];
  private bytes = 0;
  private dropped = 0;

  constructor(seed: readonly string[] = []) {
    for (const line of seed) this.add(line);
  }

  add(line: string): void {
    const bytes = Buffer.byteLength(line) + 1;
    if (this.dropped || this.bytes + bytes > TRANSCRIPT_MAX_BYTES) {
      this.dropped++;
      return;
    }
    this.lines.push(line);
    this.bytes += bytes;
  }

  note(text: string): void {
    this.add(`*** ${text}`);
  }

  get entries(): readonly string[] {
    return this.lines;
  }

  toString(): string {
    return this.lines.join('\n') + (this.dropped ? `\n*** transcript cut at ${TRANSCRIPT_MAX_BYTES} bytes: ${this.dropped} more lines` : '');
  }
}

type LogEntry = { tnx?: string };

/**
 * A bunyan-style logger for nodemailer's SMTPConnection that writes the
 * conversation into whatever transcript `target()` names at the time.
 */
export function transcriptLogger(target: () => Transcript | undefined) {
  const write = (entry: LogEntry, message: string, ...args: unknown[]) => {
    const t = target();
    if (!t) return;
    const text = format(message, ...args);
    if (entry.tnx === 'client') for (const line of text.split(/\r?\n/)) t.add(`C: ${line}`);
    else if (entry.tnx === 'server') for (const line of text.split(/\r?\n/)) t.add(`S: ${line}`);
    else if (entry.tnx === 'message') t.add(`C: ${text.replace(/^<(.*)>$/, '<message body elided: $1>')}`);
  };
  const ignore = () => undefined;
  return { trace: ignore, debug: write, info: write, warn: ignore, error: ignore, fatal: ignore };
}
