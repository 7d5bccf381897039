/**
 * The bridge from a layer's translation to Pigeon's native send: items are
 * native send bodies (what POST /v1/messages/send takes) handed to the batch
 * service, so validation, templates, MIME, DKIM, pools, suppressions, events
 * and webhooks are the native ones. Also the small helpers every layer uses.
 */
import addressparser from 'nodemailer/lib/addressparser';
import type { z } from 'zod';
import type { AppDeps } from '../deps';
import type { Caller } from '../http/context';
import { ApiError, fromZodError, unprocessable } from '../http/errors';
import { sendBatch, BatchItemResult, BatchOptions, ItemError } from '../messages/batch';

/** The native send body a layer builds (checked again by the native schema). */
export type NativeSend = Record<string, unknown>;

export async function sendNative(deps: AppDeps, caller: Caller, items: NativeSend[], opts: BatchOptions): Promise<{ data: BatchItemResult[]; replayed: boolean }> {
  return sendBatch(deps, caller, items, opts);
}

/** One item's failure as the error a single send throws. */
export const itemApiError = (e: ItemError): ApiError =>
  new ApiError(e.status, e.type as ApiError['type'], e.code, e.message, e.param);

/** A field Pigeon cannot honour: refused, never dropped. */
export const refused = (field: string, why: string): ApiError =>
  unprocessable('unsupported_field', `${field} is not supported by Pigeon: ${why}`, field);

/** A provider body checked against the layer's schema; faults name the provider's own fields. */
export function parseProvider<T extends z.ZodType>(schema: T, value: unknown, prefix: PropertyKey[] = []): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw fromZodError(result.error, 422, prefix);
  return result.data;
}

export interface NativeAddress {
  email: string;
  name?: string;
}

/** "a@x.org, Name <b@y.org>" → native addresses; an entry without an address is a 422 naming `field`. */
export function addressList(value: string, field: string): NativeAddress[] {
  const parsed = addressparser(value, { flatten: true }) as Array<{ address: string; name: string }>;
  if (parsed.length === 0) throw unprocessable('invalid_address', `${field} has no address`, field);
  return parsed.map((a) => {
    if (!a.address) throw unprocessable('invalid_address', `'${a.name}' in ${field} is not an email address`, field);
    return a.name ? { email: a.address, name: a.name } : { email: a.address };
  });
}

/** Drops undefined members, so an absent provider field stays absent in the native body. */
export function compact(body: Record<string, unknown>): NativeSend {
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
}
