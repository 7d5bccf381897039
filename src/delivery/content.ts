/**
 * Prepare step of the pipeline: the bytes that will go out, made once before
 * the first attempt. Two things happen, in this order:
 *
 * 1. `prepareContent` (the tracking module's hook) may rewrite a message that
 *    asks for open/click tracking or List-Unsubscribe. A rewritten message gets
 *    its own content row, since its bytes are no longer its siblings'.
 * 2. DKIM: the From domain's active key signs the bytes, which are stored
 *    signed. Copies of one send share their content and so one signature;
 *    the first copy to get here signs, the others read the result.
 *
 * A sandbox message from a domain without a key goes out unsigned, and the
 * content row says so (`dkim` column), as does the log.
 */
import type { Db } from '../db';
import type { Logger } from '../logger';
import type { Clock } from '../clock';
import { newId } from '../ids';
import type { Transact } from './commit';
import { signMessage, type SigningKeyLookup } from './dkim';
import type { Job } from './types';

/** Rewrites a message before signing (tracking); returns raw unchanged when there is nothing to do. */
export type PrepareContent = (job: Job, raw: Buffer) => Promise<Buffer> | Buffer;

export const unchanged: PrepareContent = (_job, raw) => raw;

export interface ContentDeps {
  db: Db;
  transact: Transact;
  clock: Clock;
  log: Logger;
  prepareContent: () => PrepareContent;
  signingKeys: () => SigningKeyLookup;
}

export type Prepared = { raw: Buffer } | { missing: true };

export class ContentPreparer {
  /** Shared contents being signed right now: siblings claimed together wait for one signature. */
  private readonly signing = new Map<string, Promise<Prepared>>();

  constructor(private readonly deps: ContentDeps) {}

  async prepare(job: Job): Promise<Prepared> {
    const row = await this.deps.db('message_contents').where({ id: job.contentId }).first('raw', 'signed');
    if (!row) return { missing: true };
    const stored = toBuffer(row.raw);
    if (row.signed) return { raw: stored };
    if (job.trackOpens || job.trackClicks || job.listUnsubscribe) {
      const raw = await this.deps.prepareContent()(job, stored);
      if (raw !== stored && !raw.equals(stored)) return this.signOwn(job, raw);
    }
    let pending = this.signing.get(job.contentId);
    if (!pending) {
      const contentId = job.contentId;
      pending = this.signShared(job, stored).finally(() => this.signing.delete(contentId));
      this.signing.set(contentId, pending);
    }
    return pending;
  }

  /** Signs a shared content and stores it; if another worker stored a signature first, that one wins. */
  private async signShared(job: Job, raw: Buffer): Promise<Prepared> {
    const { bytes, note } = await sign(this.deps, job, raw);
    return this.deps.transact(async (trx) => {
      const updated = await trx('message_contents').where({ id: job.contentId, signed: false }).update({ raw: bytes, size: bytes.length, signed: true, dkim: note });
      if (updated) return { raw: bytes };
      const signed = await trx('message_contents').where({ id: job.contentId }).first('raw');
      return { raw: toBuffer(signed.raw) };
    });
  }

  /** The rewritten bytes become this message's own content; its siblings keep the shared row. */
  private async signOwn(job: Job, raw: Buffer): Promise<Prepared> {
    const { bytes, note } = await sign(this.deps, job, raw);
    const id = newId('cnt');
    await this.deps.transact(async (trx) => {
      await trx('message_contents').insert({ id, raw: bytes, size: bytes.length, signed: true, dkim: note, created_at: this.deps.clock.now() });
      await trx('messages').where({ id: job.id, lease_owner: job.leaseOwner }).update({ content_id: id });
    });
    job.contentId = id;
    return { raw: bytes };
  }
}

async function sign(deps: ContentDeps, job: Job, raw: Buffer): Promise<{ bytes: Buffer; note: string }> {
  const domain = job.fromEmail.slice(job.fromEmail.lastIndexOf('@') + 1).toLowerCase();
  const key = await deps.signingKeys()(job.accountId, domain);
  if (!key) {
    const level = job.mode === 'live' ? 'warn' : 'info';
    deps.log[level]({ messageId: job.id, domain }, 'no DKIM key for the From domain: sending unsigned');
    return { bytes: raw, note: `unsigned: no DKIM key for ${domain}` };
  }
  const result = await signMessage(raw, key, deps.clock.now());
  if ('error' in result) {
    deps.log.error({ messageId: job.id, domain, selector: key.selector, reason: result.error }, 'DKIM signing failed: sending unsigned');
    return { bytes: raw, note: `unsigned: signing with ${key.selector}._domainkey.${key.domain} failed` };
  }
  return { bytes: result.raw, note: result.note };
}

const toBuffer = (v: Buffer | string): Buffer => (Buffer.isBuffer(v) ? v : Buffer.from(v));
