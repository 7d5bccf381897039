/**
 * The batch send service behind POST /v1/messages/batch (and the compatibility
 * layers' batch and multi-personalization sends): up to 500 independent send
 * bodies, each validated, rendered and built by the single-send pipeline
 * (prepare.ts) on its own, answered per item, and the accepted ones committed
 * together in one writer transaction (acceptBatches) with the idempotency
 * record. Items are prepared one after another so a batch holds one render at
 * a time, and their MIME copies together may not exceed what one send may
 * (maxMessageBytes × MAX_SEND_FACTOR): past that an item fails with a 413.
 */
import type { AppDeps } from '../deps';
import type { Tx } from '../db';
import { ApiError, fromZodError } from '../http/errors';
import { acceptBatches, AcceptBatch, AcceptedMessage, statusOf } from './accept';
import { abandonIdempotent, beginIdempotent, completeIdempotent, requestHash } from './idempotency';
import { prepareSend, Sender } from './prepare';
import { MAX_SEND_FACTOR } from './render-budget';
import { sendBodySchema } from './schemas';

export const MAX_BATCH_ITEMS = 500;
/**
 * Recipient copies of one batch request at most (items × their recipients): one request is one writer
 * transaction and one rate-limit token, so it must not outweigh many other callers' sends.
 */
export const MAX_BATCH_COPIES = 2000;

export interface ItemError {
  status: number;
  type: string;
  code: string;
  message: string;
  param?: string;
}

export type BatchItemResult =
  | { status: 'accepted'; batch_id: string; messages: AcceptedMessage[] }
  | { status: 'failed'; error: ItemError };

export interface BatchResult {
  /** One entry per item, in request order. */
  data: BatchItemResult[];
  /** True when this is the stored answer to an earlier request with the same Idempotency-Key. */
  replayed: boolean;
}

export interface BatchOptions {
  idempotencyKey?: string;
  /** Commit nothing unless every item is valid (Resend's strict mode, SendGrid's personalizations). */
  allOrNothing?: boolean;
  /** The calling API (v1, resend…): part of the idempotency hash, so one API's answer is never replayed to another. */
  caller?: string;
}

const itemError = (err: ApiError): ItemError => ({
  status: err.status, type: err.type, code: err.code, message: err.message, ...(err.param ? { param: err.param } : {}),
});

/** Validates and prepares every item; a failing item becomes its error, anything unexpected is thrown. */
async function prepareItems(deps: AppDeps, sender: Sender, items: unknown[]): Promise<Array<AcceptBatch | ItemError>> {
  const schema = sendBodySchema(deps.config);
  const budget = deps.config.limits.maxMessageBytes * MAX_SEND_FACTOR;
  let total = 0;
  let copies = 0;
  const out: Array<AcceptBatch | ItemError> = [];
  for (const item of items) {
    try {
      const parsed = schema.safeParse(item);
      if (!parsed.success) throw fromZodError(parsed.error, 422);
      const batch = await prepareSend(deps, sender, parsed.data);
      copies += batch.messages.length;
      if (copies > MAX_BATCH_COPIES) {
        throw new ApiError(422, 'invalid_request_error', 'batch_too_large', `a batch may hold at most ${MAX_BATCH_COPIES} recipient copies in all; send the rest in another request`);
      }
      total += batch.contents.reduce((n, c) => n + c.raw.length, 0);
      if (total > budget) {
        throw new ApiError(413, 'invalid_request_error', 'message_too_large', `the messages of this batch total more than ${budget} bytes; send fewer per request`);
      }
      out.push(batch);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      out.push(itemError(err));
    }
  }
  return out;
}

function shapeResults(prepared: Array<AcceptBatch | ItemError>, accepted: AcceptedMessage[][]): BatchItemResult[] {
  let next = 0;
  return prepared.map((p): BatchItemResult => ('messages' in p
    ? { status: 'accepted', batch_id: p.batchId, messages: accepted[next++] }
    : { status: 'failed', error: p }));
}

/** Prepares, then commits the valid items (all or none with allOrNothing); `alsoInTx` joins their transaction. */
async function run(deps: AppDeps, sender: Sender, items: unknown[], opts: BatchOptions, alsoInTx?: (trx: Tx, data: BatchItemResult[]) => Promise<void>) {
  const prepared = await prepareItems(deps, sender, items);
  const batches = prepared.filter((p): p is AcceptBatch => 'messages' in p);
  const commit = batches.length > 0 && (!opts.allOrNothing || batches.length === prepared.length);
  if (!commit) return { data: shapeResults(prepared, []), committed: false };
  // The response is known before the commit (ids are made in prepare), so it can be stored in the same transaction.
  const planned = shapeResults(prepared, batches.map((b) => b.messages.map((m) => ({ id: m.id, to: m.toEmail, status: statusOf(b) }))));
  await acceptBatches(deps, batches, alsoInTx ? (trx) => alsoInTx(trx, planned) : undefined);
  return { data: planned, committed: true };
}

export async function sendBatch(deps: AppDeps, sender: Sender, items: unknown[], opts: BatchOptions = {}): Promise<BatchResult> {
  // The routes' schemas bound this too; the service holds its own bound for every layer that calls it.
  if (items.length > MAX_BATCH_ITEMS) throw new ApiError(422, 'invalid_request_error', 'too_many_items', `at most ${MAX_BATCH_ITEMS} items per batch`);
  if (opts.idempotencyKey === undefined) return { data: (await run(deps, sender, items, opts)).data, replayed: false };
  const scope = { ...sender, key: opts.idempotencyKey };
  // The hash names the batch API and its caller, so a single send's key and body never replay a batch answer.
  const hash = requestHash({ batch: opts.caller ?? 'v1', items });
  const begun = await beginIdempotent(deps.db, scope, hash, deps.clock.now());
  if (begun.kind === 'replay') return { data: (begun.body as { data: BatchItemResult[] }).data, replayed: true };
  try {
    const result = await run(deps, sender, items, opts, (trx, data) => completeIdempotent(trx, scope, 200, { data }));
    // Nothing stored: the key is released so a corrected request may use it.
    if (!result.committed) await abandonIdempotent(deps.db, scope);
    return { data: result.data, replayed: false };
  } catch (err) {
    await abandonIdempotent(deps.db, scope).catch((e: unknown) => deps.log.warn({ err: e }, 'could not release an idempotency key'));
    throw err;
  }
}
