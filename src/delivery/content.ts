/**
 * Prepare step of the pipeline: the bytes that will go out, made once before
 * the first attempt. Two things happen, in this order:
 *
 * 1. `prepareContent` (the tracking module's hook) may rewrite a message that
 *    asks for open/click tracking or List-Unsubscribe. A rewritten message gets
 *    its own content row, since its bytes are no longer its siblings'.
 * 2. DKIM: the From domain's active key signs the bytes. Copies of one send
 *    share their content and so one signature: the first copy to get here
 *    signs, copies in flight at the same time wait for that signature, later
 *    ones read the stored bytes.
 *
 * The signed bytes are stored with the outcome of the first attempt when it
 * is a deferral (record step), in its transaction; every retry sends exactly
 * those bytes. A first attempt that ends the message (delivered, bounced)
 * stores only the note of how it was signed, on the message.
 *
 * A sandbox message from a domain without a key goes out unsigned, and the
 * content row says so (`dkim` column), as does the log.
 */
import type { Db } from '../db';
import type { Logger } from '../logger';
import type { Clock } from '../clock';
import { newId } from '../ids';
import type { SigningKeyLookup } from './dkim';
import type { Signer } from './signer';
import type { Job } from './types';

/** Rewrites a message before signing (tracking); returns raw unchanged when there is nothing to do. */
export type PrepareContent = (job: Job, raw: Buffer) => Promise<Buffer> | Buffer;

export const unchanged: PrepareContent = (_job, raw) => raw;

export interface ContentDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  prepareContent: () => PrepareContent;
  signingKeys: () => SigningKeyLookup;
  signer: Signer;
}

export type Prepared = { raw: Buffer } | { missing: true };

interface Signed {
  bytes: Buffer;
  note: string;
}

export class ContentPreparer {
  /** Shared contents signed and not yet stored: siblings in flight together use one signature. */
  // Bounded by the messages in flight (delivery.concurrency); entries are removed once stored.
  private readonly signing = new Map<string, Promise<Signed>>();

  constructor(private readonly deps: ContentDeps) {}

  /**
   * The bytes to send. When they are new (signed now), `job.pendingContent`
   * stores them in the transaction that records the attempt's outcome, so
   * preparing costs no commit of its own; retries then read them back.
   */
  async prepare(job: Job): Promise<Prepared> {
    const preloaded = job.preloaded?.content;
    const row = preloaded !== undefined ? preloaded : await this.deps.db('message_contents').where({ id: job.contentId }).first('raw', 'signed');
    if (job.preloaded) job.preloaded.content = undefined; // the bytes live on in `stored`; the job need not hold them
    if (!row) return { missing: true };
    const stored = toBuffer(row.raw);
    if (row.signed) return { raw: stored };
    if (job.trackOpens || job.trackClicks || job.listUnsubscribe) {
      const raw = await this.deps.prepareContent()(job, stored);
      if (raw !== stored && !raw.equals(stored)) return this.ownContent(job, await sign(this.deps, job, raw));
    }
    const contentId = job.contentId;
    let pending = this.signing.get(contentId);
    if (!pending) {
      pending = sign(this.deps, job, stored);
      this.signing.set(contentId, pending);
      pending.catch(() => this.signing.delete(contentId));
    }
    const signed = await pending;
    job.pendingContent = {
      note: signed.note,
      write: async (trx) => {
        // The first copy to record stores the signature; a sibling's later write finds it signed and changes nothing.
        await trx('message_contents').where({ id: contentId, signed: false }).update({ raw: signed.bytes, size: signed.bytes.length, signed: true, dkim: signed.note });
      },
      settled: () => this.signing.delete(contentId),
    };
    return { raw: signed.bytes };
  }

  /** Rewritten bytes become this message's own content; its siblings keep the shared row. */
  private ownContent(job: Job, signed: Signed): Prepared {
    const id = newId('cnt');
    const now = this.deps.clock.now();
    job.pendingContent = {
      note: signed.note,
      write: async (trx) => {
        await trx('message_contents').insert({ id, raw: signed.bytes, size: signed.bytes.length, signed: true, dkim: signed.note, created_at: now });
        await trx('messages').where({ id: job.id }).update({ content_id: id });
      },
    };
    return { raw: signed.bytes };
  }
}

async function sign(deps: ContentDeps, job: Job, raw: Buffer): Promise<Signed> {
  const domain = job.fromEmail.slice(job.fromEmail.lastIndexOf('@') + 1).toLowerCase();
  const key = await deps.signingKeys()(job.accountId, domain);
  if (!key) {
    const level = job.mode === 'live' ? 'warn' : 'info';
    deps.log[level]({ messageId: job.id, domain }, 'no DKIM key for the From domain: sending unsigned');
    return { bytes: raw, note: `unsigned: no DKIM key for ${domain}` };
  }
  const result = await deps.signer.sign(raw, key, deps.clock.now());
  if ('error' in result) {
    deps.log.error({ messageId: job.id, domain, selector: key.selector, reason: result.error }, 'DKIM signing failed: sending unsigned');
    return { bytes: raw, note: `unsigned: signing with ${key.selector}._domainkey.${key.domain} failed` };
  }
  return { bytes: result.raw, note: result.note };
}

const toBuffer = (v: Buffer | string): Buffer => (Buffer.isBuffer(v) ? v : Buffer.from(v));
