/**
 * Recording an event is the fan-out point of the pipeline: the event row, the
 * webhook delivery rows for every matching endpoint and the analytics rollups
 * are written in the caller's transaction, so either all of them exist or
 * none does. Callers pass the transaction that also changes the message.
 */
import type { Tx } from '../db';
import { toJson } from '../db';
import { insertRows } from '../db/buffer';
import { newId } from '../ids';
import { iso } from '../clock';
import type { Mode } from '../auth/scopes';
import type { EventType } from './schemas';

export interface EventInput {
  accountId: string;
  mode: Mode;
  type: EventType | string;
  messageId?: string | null;
  data: Record<string, unknown>;
  at: number;
  /**
   * The message's analytics dimensions when the caller has them at hand (the MTA does), so the rollup sink
   * need not read the message row again for every event.
   */
  dims?: EventDims;
}

/** What rollups need of a message besides the event's own account, mode and time. */
export interface EventDims {
  sendingDomain: string;
  recipientDomain: string;
  tags: string[];
  ipPool: string | null;
}

export interface RecordedEvent extends EventInput {
  id: string;
}

/** The webhook envelope of SPEC.md part 2. */
export function envelope(event: RecordedEvent): { id: string; event: string; timestamp: string; data: Record<string, unknown> } {
  return { id: event.id, event: event.type, timestamp: iso(event.at) as string, data: event.data };
}

export type EventSink = (trx: Tx, event: RecordedEvent) => Promise<void>;

/**
 * Consumers that must see every event in the same transaction (webhook
 * deliveries, rollups). Registered once at start by createApp.
 */
const sinks: EventSink[] = [];

export function addEventSink(sink: EventSink): void {
  if (!sinks.includes(sink)) sinks.push(sink);
}

export async function recordEvent(trx: Tx, input: EventInput): Promise<RecordedEvent> {
  const event: RecordedEvent = { ...input, id: newId('evt') };
  await insertRows(trx, 'events', [{
    id: event.id,
    account_id: event.accountId,
    mode: event.mode,
    type: event.type,
    message_id: event.messageId ?? null,
    data: toJson(event.data),
    created_at: event.at,
  }]);
  for (const sink of sinks) await sink(trx, event);
  return event;
}

/** Fields every message event carries (SPEC.md part 2 plus tags/metadata/sandbox). */
export interface MessageFacts {
  id: string;
  mode: Mode;
  toEmail: string;
  fromEmail: string;
  tags: string[];
  metadata: Record<string, string>;
}

export function messageEventData(m: MessageFacts, fields: Record<string, unknown>): Record<string, unknown> {
  return {
    message_id: m.id,
    to: m.toEmail,
    from: m.fromEmail,
    ...fields,
    ...(m.tags.length ? { tags: m.tags } : {}),
    ...(Object.keys(m.metadata).length ? { metadata: m.metadata } : {}),
    ...(m.mode === 'test' ? { sandbox: true } : {}),
  };
}
