/** The domain record as the API returns it, and the zod schemas that document it in OpenAPI. */
import { z } from 'zod';
import type { Config } from '../config';
import { iso } from '../clock';
import { DKIM_ALGORITHMS } from './keys';
import { expectedRecords, recordViews } from './records';
import type { SenderRules } from './sender-rules';
import type { DomainBundle } from './service';

const HOUR = 3_600_000;

export const RECORD_STATES = ['pending', 'verified', 'mismatch', 'missing', 'temporary_error'] as const;

export const dnsRecordSchema = z.object({
  purpose: z.enum(['dkim', 'spf', 'dmarc', 'return_path']).describe('What the record is for.'),
  type: z.enum(['TXT', 'CNAME']).describe('DNS record type to publish.'),
  host: z.string().describe('Fully qualified name to publish the record at.'),
  value: z.string().describe('Record value. TXT values longer than 255 characters are published as several strings of one record.'),
  required: z.boolean().describe('True for the records the domain needs to be verified: the active DKIM key and SPF.'),
  state: z.enum(RECORD_STATES).describe('pending (never checked), verified, mismatch (found, but wrong), missing, temporary_error (DNS did not answer; try again).'),
  found: z.array(z.string()).nullable().describe('What DNS returned instead, when the record is failing.'),
  detail: z.string().nullable().describe('Why the record is failing (e.g. "SPF softfail for 192.0.2.1").'),
  checked_at: z.string().nullable().describe('When the record was last looked up.'),
  selector: z.string().optional().describe('DKIM records: the selector.'),
  key_status: z.enum(['active', 'pending']).optional()
    .describe('DKIM records: active signs mail; pending is a new key (rotation, or an added Ed25519 key) that signs once its record verifies.'),
  key_role: z.enum(['primary', 'second']).optional()
    .describe('DKIM records: primary is the domain\'s key; second is its optional Ed25519 key, whose signature is added to the primary one.'),
});

export const domainSchema = z.object({
  id: z.string().describe('Identifier, prefix `dom_` (domains are addressed by name in paths).'),
  name: z.string().describe('The domain, lower-case; internationalised names in punycode.'),
  status: z.enum(['pending', 'verified', 'failing'])
    .describe('pending: not verified yet (live sends refused); verified; failing: records went missing at a re-check, still sendable until the grace period ends.'),
  created_at: z.string(),
  verified_at: z.string().nullable(),
  last_checked_at: z.string().nullable(),
  failing_since: z.string().nullable(),
  grace_ends_at: z.string().nullable().describe('For a failing domain: when it becomes pending unless its records are back.'),
  dkim: z.object({ selector: z.string(), algorithm: z.enum(DKIM_ALGORITHMS) }).nullable().describe('The key that signs mail now.'),
  dkim_ed25519: z.object({ selector: z.string(), status: z.enum(['active', 'pending']) }).nullable()
    .describe('The optional Ed25519 second key: active adds a second DKIM-Signature to every message; pending waits for its record to verify. Null when the domain has none.'),
  dns_records: z.array(dnsRecordSchema),
});

export type DomainView = z.infer<typeof domainSchema>;

export function shapeDomain(config: Config, b: DomainBundle): DomainView {
  const d = b.domain;
  const active = b.keys.find((k) => k.status === 'active' && k.role === 'primary');
  const second = b.keys.find((k) => k.role === 'second'); // keysOf puts the active one first
  return {
    id: d.id,
    name: d.name,
    status: d.status,
    created_at: iso(d.createdAt) as string,
    verified_at: iso(d.verifiedAt),
    last_checked_at: iso(d.lastCheckedAt),
    failing_since: iso(d.failingSince),
    grace_ends_at: d.failingSince === null ? null : iso(d.failingSince + config.domains.failingGraceHours * HOUR),
    dkim: active ? { selector: active.selector, algorithm: active.algorithm } : null,
    dkim_ed25519: second ? { selector: second.selector, status: second.status } : null,
    dns_records: recordViews(expectedRecords(config, d.name, b.keys), b.checks),
  };
}

const ruleSchema = z.object({ ok: z.boolean(), detail: z.string().describe('What was found, and what to fix.') });

export const senderRulesSchema = z.object({
  meets_requirements: z.boolean().describe('True when DMARC exists, DKIM or SPF aligns with the From domain, and bulk mail gets one-click unsubscribe.'),
  dkim_aligned: ruleSchema.describe('Pigeon signs with d=<this domain>: aligned once the active key\'s record verifies.'),
  spf_aligned: ruleSchema.describe('Whether the envelope sender\'s domain (the bounce domain) shares this domain\'s organisational domain (the same name under aspf=s).'),
  dmarc: ruleSchema.extend({
    policy: z.enum(['none', 'quarantine', 'reject']).nullable().describe('p= of the record that applies (the domain\'s, or its organisation\'s).'),
  }).describe('Whether a valid DMARC record applies to the domain.'),
  one_click_unsubscribe: ruleSchema.extend({
    bulk_tags: z.array(z.string()).describe('Tags that make a message bulk (messages.bulkTags): those get List-Unsubscribe and List-Unsubscribe-Post by default.'),
  }).describe('Whether mail that looks bulk gets RFC 8058 one-click unsubscribe.'),
}).describe('Extension: the Gmail/Yahoo sender requirements for this domain (looked up when asked; see docs/domains.md).');

export const domainDetailSchema = domainSchema.extend({ sender_rules: senderRulesSchema });

export function shapeSenderRules(r: SenderRules): z.infer<typeof senderRulesSchema> {
  return {
    meets_requirements: r.meets,
    dkim_aligned: r.dkimAligned,
    spf_aligned: r.spfAligned,
    dmarc: { ok: r.dmarc.ok, policy: r.dmarc.policy, detail: r.dmarc.detail },
    one_click_unsubscribe: { ok: r.oneClickUnsubscribe.ok, bulk_tags: r.oneClickUnsubscribe.bulkTags, detail: r.oneClickUnsubscribe.detail },
  };
}
