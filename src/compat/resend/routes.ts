/**
 * The Resend layer (mounted at /resend, or at / on compat.resend.port):
 * POST /emails, POST /emails/batch, GET /emails/{id}, PATCH /emails/{id}
 * (reschedule), POST /emails/{id}/cancel. Resend's id of an email is the
 * native send's batch_id, which names every recipient copy of that send.
 * `Authorization: Bearer` carries a Pigeon API key; `Idempotency-Key` is the native one.
 */
import type { Context } from 'koa';
import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { bearerSecret } from '../../auth/authenticate';
import type { Caller } from '../../http/context';
import { ApiError, conflict, notFound } from '../../http/errors';
import { idempotencyKeyOf } from '../../messages/idempotency';
import { resolveSendAt } from '../../messages/prepare';
import { cancelBatch, messagesOfBatch, rescheduleBatch } from '../../messages/repository';
import type { CompatLayer, CompatRoute } from '../layer';
import { itemApiError, NativeSend, parseProvider, sendNative } from '../native';
import { resendError, resendFault } from './errors';
import { shapeEmail } from './shape';
import { fromResend } from './translate';

/** Resend's own batch limit. */
const MAX_BATCH = 100;
const idParam = z.string().min(1).max(64);

const options = (ctx: Context) => ({ idempotencyKey: idempotencyKeyOf(ctx.get('idempotency-key')), caller: 'resend' });

async function sendOne(deps: AppDeps, caller: Caller, ctx: Context, body: unknown) {
  const native = fromResend(body);
  const [result] = (await sendNative(deps, caller, [native], options(ctx))).data;
  if (result.status === 'failed') throw itemApiError(result.error);
  return { status: 200, body: { id: result.batch_id } };
}

/**
 * strict (Resend's default): any invalid item fails the request and nothing is sent.
 * permissive: the valid items are sent; `errors` lists the others by index.
 */
async function sendMany(deps: AppDeps, caller: Caller, ctx: Context, body: unknown) {
  const items = parseProvider(z.array(z.unknown()).min(1).max(MAX_BATCH), body);
  const permissive = ctx.get('x-batch-validation') === 'permissive';
  const natives: Array<NativeSend | ApiError> = items.map((item, i) => {
    try {
      return fromResend(item, [i]);
    } catch (err) {
      if (!(err instanceof ApiError) || !permissive) throw err;
      return err;
    }
  });
  const valid = natives.filter((n): n is NativeSend => !(n instanceof ApiError));
  const results = valid.length ? (await sendNative(deps, caller, valid, { ...options(ctx), allOrNothing: !permissive })).data : [];
  const failed = results.find((r) => r.status === 'failed');
  if (!permissive && failed?.status === 'failed') throw itemApiError(failed.error);
  const data: Array<{ id: string }> = [];
  const errors: Array<{ index: number; message: string }> = [];
  let next = 0;
  natives.forEach((n, index) => {
    const r = n instanceof ApiError ? n : results[next++];
    if (r instanceof ApiError) errors.push({ index, message: resendFault(r).message });
    else if (r.status === 'failed') errors.push({ index, message: resendFault(r.error).message });
    else data.push({ id: r.batch_id });
  });
  return { status: 200, body: permissive ? { data, errors } : { data } };
}

async function getEmail(deps: AppDeps, caller: Caller, id: string) {
  const copies = await messagesOfBatch(deps.reader, caller, parseProvider(idParam, id));
  if (copies.length === 0) throw notFound('email', 'id');
  return { status: 200, body: shapeEmail(copies) };
}

const rescheduleBody = z.strictObject({ scheduled_at: z.iso.datetime({ offset: true, error: 'expected an ISO 8601 date-time with a time zone' }) });

async function reschedule(deps: AppDeps, caller: Caller, id: string, body: unknown) {
  const { scheduled_at } = parseProvider(rescheduleBody, body);
  const now = deps.clock.now();
  const at = Math.max(resolveSendAt(scheduled_at, now, deps.config.limits.sendAtHorizonHours) ?? now, now);
  await changeScheduled(deps, caller, id, 'rescheduled', () => rescheduleBatch(deps.db, caller, id, at, now));
  return { status: 200, body: { object: 'email', id } };
}

async function cancel(deps: AppDeps, caller: Caller, id: string) {
  await changeScheduled(deps, caller, id, 'cancelled', () => cancelBatch(deps.db, caller, id, deps.clock.now()));
  return { status: 200, body: { object: 'email', id } };
}

/** Runs the change; none changed is a 404 (no such email) or a 409 (no copy is still scheduled). */
async function changeScheduled(deps: AppDeps, caller: Caller, id: string, what: string, change: () => Promise<number>) {
  parseProvider(idParam, id);
  if ((await change()) > 0) {
    // A new send time may be earlier than the one this node's MTA (or another node's) sleeps until.
    if (what === 'rescheduled') deps.signals.emit('queueChanged');
    return;
  }
  const copies = await messagesOfBatch(deps.db, caller, id);
  if (copies.length === 0) throw notFound('email', 'id');
  throw conflict('message_not_cancellable', `this email cannot be ${what}: its status is '${copies[0].status}'; only scheduled emails can`);
}

function routes(deps: AppDeps): CompatRoute[] {
  return [
    { method: 'post', path: '/emails', scope: 'messages:send', body: true, handler: ({ caller, ctx, body }) => sendOne(deps, caller, ctx, body) },
    { method: 'post', path: '/emails/batch', scope: 'messages:send', body: true, handler: ({ caller, ctx, body }) => sendMany(deps, caller, ctx, body) },
    { method: 'get', path: '/emails/:id', scope: 'messages:read', handler: ({ caller, ctx }) => getEmail(deps, caller, ctx.params.id) },
    { method: 'patch', path: '/emails/:id', scope: 'messages:send', body: true, handler: ({ caller, ctx, body }) => reschedule(deps, caller, ctx.params.id, body) },
    { method: 'post', path: '/emails/:id/cancel', scope: 'messages:send', handler: ({ caller, ctx }) => cancel(deps, caller, ctx.params.id) },
  ];
}

export const resendLayer: CompatLayer = { name: 'resend', secretOf: bearerSecret, toProviderError: resendError, routes };
