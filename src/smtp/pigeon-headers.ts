/**
 * The X-Pigeon-* headers: an SMTP client's way to give what the send API
 * takes as JSON fields (ip_pool, tags, metadata, send_at, track_opens,
 * track_clicks, list_unsubscribe). They are validated by the send API's own
 * schema, so both paths accept exactly the same values (RFC 2047 encoded
 * values, as mail libraries write them, are decoded first), and removed from the
 * stored message, so they never reach a recipient. A bad value refuses the
 * message with a reply that names the header; an unknown X-Pigeon-* header is
 * refused too, so a typo cannot silently drop an option.
 */
import type { Config } from '../config';
import { sendBodySchema } from '../messages/schemas';
import { decodeEncodedWords, fieldName, fieldValue, type HeaderField } from './headers';
import { smtpReply } from './replies';

export interface PigeonOptions {
  ipPool?: string;
  tags?: string[];
  metadata?: Record<string, string>;
  /** ms since the epoch */
  sendAt?: number;
  trackOpens?: boolean;
  trackClicks?: boolean;
  listUnsubscribe?: boolean;
}

type Body = Record<string, unknown>;

/** Header (lower-case) → how its value becomes the send API field. */
const HEADERS: Record<string, { field: string; parse(value: string, header: string): unknown }> = {
  'x-pigeon-ip-pool': { field: 'ip_pool', parse: (v) => v },
  'x-pigeon-tags': { field: 'tags', parse: (v) => v.split(',').map((t) => t.trim()).filter(Boolean) },
  'x-pigeon-metadata': { field: 'metadata', parse: parseJsonObject },
  'x-pigeon-send-at': { field: 'send_at', parse: (v) => v },
  'x-pigeon-track-opens': { field: 'track_opens', parse: parseBoolean },
  'x-pigeon-track-clicks': { field: 'track_clicks', parse: parseBoolean },
  'x-pigeon-list-unsubscribe': { field: 'list_unsubscribe', parse: parseBoolean },
};

const DISPLAY: Record<string, string> = {
  ip_pool: 'X-Pigeon-IP-Pool', tags: 'X-Pigeon-Tags', metadata: 'X-Pigeon-Metadata', send_at: 'X-Pigeon-Send-At',
  track_opens: 'X-Pigeon-Track-Opens', track_clicks: 'X-Pigeon-Track-Clicks', list_unsubscribe: 'X-Pigeon-List-Unsubscribe',
};

const refuse = (header: string, why: string) => smtpReply(554, '5.6.0', `${header}: ${why}`);

function parseJsonObject(value: string, header: string): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw refuse(header, 'not valid JSON; expected an object of string values, e.g. {"order":"1234"}');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw refuse(header, 'expected a JSON object of string values');
  return parsed;
}

function parseBoolean(value: string, header: string): boolean {
  const v = value.toLowerCase();
  if (['true', 'yes', '1', 'on'].includes(v)) return true;
  if (['false', 'no', '0', 'off'].includes(v)) return false;
  throw refuse(header, `'${value}' is not a boolean; use true or false`);
}

/** Parsers built once per config (the schema carries config limits). */
export function createPigeonHeaderReader(config: Config) {
  const schema = sendBodySchema(config).pick({
    ip_pool: true, tags: true, metadata: true, send_at: true, track_opens: true, track_clicks: true, list_unsubscribe: true,
  });

  /** Splits off the X-Pigeon-* fields; throws SmtpReply when one is unknown, repeated or invalid. */
  return function readPigeonHeaders(fields: HeaderField[]): { options: PigeonOptions; kept: HeaderField[] } {
    const body: Body = {};
    const kept: HeaderField[] = [];
    for (const f of fields) {
      if (!f.name.startsWith('x-pigeon-')) {
        kept.push(f);
        continue;
      }
      const spec = HEADERS[f.name];
      const shown = fieldName(f);
      if (!spec) throw refuse(shown, `unknown header; Pigeon reads ${Object.values(DISPLAY).join(', ')}`);
      if (spec.field in body) throw refuse(shown, 'given more than once');
      body[spec.field] = spec.parse(decodeEncodedWords(fieldValue(f)), shown);
    }
    const result = schema.safeParse(body);
    if (!result.success) {
      const issue = result.error.issues[0];
      const field = String(issue.path[0]);
      const at = issue.path.length > 1 ? ` (${issue.path.slice(1).join('.')})` : '';
      throw refuse(DISPLAY[field] ?? field, `${issue.message}${at}`);
    }
    const d = result.data;
    const options: PigeonOptions = {
      ipPool: d.ip_pool, tags: d.tags, metadata: d.metadata, sendAt: d.send_at === undefined ? undefined : Date.parse(d.send_at),
      trackOpens: d.track_opens, trackClicks: d.track_clicks, listUnsubscribe: d.list_unsubscribe,
    };
    return { options, kept };
  };
}
