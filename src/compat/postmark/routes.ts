/**
 * The Postmark layer (mounted at /postmark, or at / on compat.postmark.port):
 * POST /email, /email/batch, /email/withTemplate, /email/batchWithTemplates.
 * The X-Postmark-Server-Token header carries a Pigeon API key. Every message
 * becomes a native send; a batch is one native batch (per-item answers, one commit).
 */
import type { Context } from 'koa';
import { z } from 'zod';
import type { AppDeps } from '../../deps';
import type { Caller } from '../../http/context';
import { ApiError, unprocessable } from '../../http/errors';
import type { BatchItemResult } from '../../messages/batch';
import type { CompatLayer, CompatRoute } from '../layer';
import { itemApiError, NativeSend, parseProvider, sendNative } from '../native';
import { postmarkError, postmarkFault } from './errors';
import { fromEmail, fromTemplated } from './translate';

/** Postmark's own batch limit. */
const MAX_BATCH = 500;

const submittedAt = (deps: AppDeps) => new Date(deps.clock.now()).toISOString();

/** An item's answer as Postmark gives it; `To` echoes the request's To. */
function itemReply(deps: AppDeps, result: BatchItemResult, to: string): Record<string, unknown> {
  if (result.status === 'failed') return { ...postmarkFault(result.error), To: to };
  return { To: to, SubmittedAt: submittedAt(deps), MessageID: result.messages[0].id, ErrorCode: 0, Message: 'OK' };
}

const toOf = (value: unknown): string => String((value as { To?: unknown } | null)?.To ?? '');

async function sendOne(deps: AppDeps, caller: Caller, raw: unknown, native: NativeSend) {
  const [result] = (await sendNative(deps, caller, [native], { caller: 'postmark' })).data;
  if (result.status === 'failed') throw itemApiError(result.error);
  return { status: 200, body: itemReply(deps, result, toOf(raw)) };
}

const batchOf = (body: unknown, field?: string): unknown[] => {
  const list = field ? (body as Record<string, unknown> | null)?.[field] : body;
  const items = parseProvider(z.array(z.unknown()), list, field ? [field] : []);
  if (items.length > MAX_BATCH) throw new ApiError(422, 'invalid_request_error', 'too_many_batch_messages', `a batch may hold at most ${MAX_BATCH} messages`);
  if (items.length === 0) throw unprocessable('validation_failed', 'the batch is empty');
  return items;
};

/**
 * Translates every item (a translation fault fails that item only), sends the valid ones as one native
 * batch, and answers one entry per item in order.
 */
async function sendMany(deps: AppDeps, caller: Caller, items: unknown[], translate: (item: unknown, i: number) => Promise<NativeSend>) {
  const natives: Array<NativeSend | ApiError> = [];
  for (const [i, item] of items.entries()) {
    try {
      natives.push(await translate(item, i));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      natives.push(err);
    }
  }
  const valid = natives.filter((n): n is NativeSend => !(n instanceof ApiError));
  const results = valid.length ? (await sendNative(deps, caller, valid, { caller: 'postmark' })).data : [];
  let next = 0;
  const reply = natives.map((n, i) => (n instanceof ApiError ? { ...postmarkFault(n), To: toOf(items[i]) } : itemReply(deps, results[next++], toOf(items[i]))));
  return { status: 200, body: reply };
}

function routes(deps: AppDeps): CompatRoute[] {
  return [
    { method: 'post', path: '/email', scope: 'messages:send', body: true, handler: ({ caller, body }) => sendOne(deps, caller, body, fromEmail(body)) },
    {
      method: 'post', path: '/email/withTemplate', scope: 'messages:send', body: true,
      handler: async ({ caller, body }) => sendOne(deps, caller, body, await fromTemplated(deps, caller, body)),
    },
    {
      method: 'post', path: '/email/batch', scope: 'messages:send', body: true,
      handler: ({ caller, body }) => sendMany(deps, caller, batchOf(body), async (item) => fromEmail(item)),
    },
    {
      method: 'post', path: '/email/batchWithTemplates', scope: 'messages:send', body: true,
      handler: ({ caller, body }) => sendMany(deps, caller, batchOf(body, 'Messages'), (item) => fromTemplated(deps, caller, item)),
    },
  ];
}

const serverToken = (ctx: Context): string | undefined => ctx.get('x-postmark-server-token') || undefined;

export const postmarkLayer: CompatLayer = { name: 'postmark', secretOf: serverToken, toProviderError: postmarkError, routes };
