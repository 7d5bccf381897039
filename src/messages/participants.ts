/**
 * The people of one send: sender, recipients (to, cc, bcc) and reply-to,
 * parsed and checked as a whole — the recipient limit, no address twice, and
 * no cc/bcc together with per-recipient substitutions (those copies each get
 * their own To header, so a shared Cc would be ambiguous).
 */
import { unprocessable } from '../http/errors';
import { Address, AddressInput, parseAddress } from './addresses';
import type { SendBody, ToInput } from './schemas';

export interface Recipient extends Address {
  type: 'to' | 'cc' | 'bcc';
  /** e.g. `to[3]`, for errors */
  param: string;
  substitutions?: Record<string, unknown>;
}

export interface Participants {
  from: Address;
  replyTo: Address[];
  to: Recipient[];
  cc: Recipient[];
  bcc: Recipient[];
  /** Any `to` entry carries substitutions: render one copy per `to` recipient. */
  perRecipient: boolean;
}

function recipients(value: Array<AddressInput | ToInput> | undefined, type: Recipient['type']): Recipient[] {
  if (!value) return [];
  const list: Recipient[] = [];
  for (let i = 0; i < value.length; i++) {
    const input = value[i];
    const param = `${type}[${i}]`;
    const { email, name, domain } = parseAddress(input, param);
    const substitutions = typeof input === 'object' && 'substitutions' in input ? input.substitutions : undefined;
    // one object literal of one shape (a spread built each recipient key by key, several µs a send)
    list.push({ email, name, domain, type, param, substitutions });
  }
  return list;
}

export function parseParticipants(body: SendBody, maxRecipients: number): Participants {
  const from = parseAddress(body.from, 'from');
  const replyTo = body.reply_to === undefined ? [] : [parseAddress(body.reply_to, 'reply_to')];
  const to = recipients(body.to, 'to');
  const cc = recipients(body.cc, 'cc');
  const bcc = recipients(body.bcc, 'bcc');
  const all = [...to, ...cc, ...bcc];
  if (all.length > maxRecipients) {
    throw unprocessable('too_many_recipients', `at most ${maxRecipients} recipients (to, cc and bcc together) per send`, all[maxRecipients].param);
  }
  const seen = new Set<string>();
  for (const r of all) {
    const key = r.email.toLowerCase();
    if (seen.has(key)) throw unprocessable('duplicate_recipient', `${r.email} appears more than once among to, cc and bcc`, r.param);
    seen.add(key);
  }
  const perRecipient = to.some((r) => r.substitutions !== undefined);
  if (perRecipient && (cc.length || bcc.length)) {
    throw unprocessable('substitutions_with_cc', 'cc and bcc cannot be combined with per-recipient substitutions', cc.length ? 'cc' : 'bcc');
  }
  return { from, replyTo, to, cc, bcc, perRecipient };
}
