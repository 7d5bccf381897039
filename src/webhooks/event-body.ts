/**
 * The body of a webhook request: the event's envelope (SPEC.md part 2) as
 * JSON. Kept apart from attempt.ts, which the sender thread loads without
 * the database.
 */
import type { Mode } from '../auth/scopes';
import { fromJson } from '../db';
import { envelope, type RecordedEvent } from '../events/record';

/**
 * The body of an event's webhook request: its envelope as JSON, rebuilt from
 * the events row at every attempt. JSON text → parse → stringify gives the
 * same bytes, so every attempt carries exactly what the first one did.
 */
export function eventBody(row: { id: string; account_id: string; mode: string; type: string; message_id: string | null; data: string; created_at: number }): string {
  return eventRequestBody({
    id: row.id,
    accountId: row.account_id,
    mode: row.mode as Mode,
    type: row.type,
    messageId: row.message_id,
    data: fromJson<Record<string, unknown>>(row.data, {}),
    at: Number(row.created_at),
  });
}

/**
 * The same body from the event as recorded (the hand-over of new deliveries, handoff.ts): the stored JSON
 * text of its data parses back to what was stringified, so the first attempt carries what every later one does.
 */
export function eventRequestBody(event: RecordedEvent): string {
  return JSON.stringify(envelope(event));
}
