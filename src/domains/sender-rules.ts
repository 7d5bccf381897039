/**
 * What Gmail and Yahoo ask of senders since February 2024, judged for one
 * sending domain as Pigeon sends its mail:
 *  - DMARC alignment: mail passes DMARC when DKIM or SPF passes for a domain
 *    aligned with the From domain. Pigeon signs with the From domain's own key
 *    (d=<domain>), so DKIM aligns once that key's record verifies; SPF is
 *    checked for the envelope sender, the bounce domain (delivery.bounceDomain
 *    or hostname), which aligns only when it shares the From domain's
 *    organisational domain (relaxed; the same name under aspf=s).
 *  - a DMARC record (p=none is enough for them; its policy is reported);
 *  - one-click unsubscribe (RFC 8058) on bulk mail: on by default for messages
 *    tagged with one of messages.bulkTags (src/messages/bulk.ts).
 * Read-only: one DMARC lookup, the rest from the stored checks and config.
 */
import type { Config } from '../config';
import type { DnsResolver } from '../dns/resolver';
import { bounceHost } from './records';
import { dmarcProblem, findDmarc, parseTags } from './checks';
import type { DomainBundle } from './service';

// mailauth's own organisational-domain alignment (public suffix list via tldts); no type declarations.
const { getAlignment } = require('mailauth/lib/tools') as { getAlignment(from: string, domains: string[], strict: boolean): unknown };

export interface Rule {
  ok: boolean;
  detail: string;
}

export interface SenderRules {
  meets: boolean;
  dkimAligned: Rule;
  spfAligned: Rule;
  dmarc: Rule & { policy: 'none' | 'quarantine' | 'reject' | null; temporary: boolean };
  oneClickUnsubscribe: Rule & { bulkTags: string[] };
}

type Dmarc = SenderRules['dmarc'];

async function dmarcOf(resolver: DnsResolver, domain: string): Promise<{ rule: Dmarc; tags: Map<string, string> }> {
  const found = await findDmarc(resolver, domain);
  const none = (detail: string, temporary = false) => ({ rule: { ok: false, policy: null, temporary, detail }, tags: new Map<string, string>() });
  if (found.kind === 'temporary') return none(`DNS lookup of ${found.host} failed temporarily (${found.code}); try again later`, true);
  if (found.kind === 'missing') return none(`no DMARC record at _dmarc.${domain}: publish at least "v=DMARC1; p=none" (Gmail and Yahoo require one)`);
  const problem = found.records.length > 1 ? `${found.host} has ${found.records.length} DMARC records; receivers ignore all of them` : dmarcProblem(found.records[0]);
  if (problem) return none(problem);
  const tags = parseTags(found.records[0]);
  const policy = tags.get('p')!.toLowerCase() as 'none' | 'quarantine' | 'reject';
  const where = found.host === `_dmarc.${domain}` ? found.host : `${found.host} (inherited)`;
  const advice = policy === 'none' ? '; p=none only monitors: move to quarantine or reject once reports show all your mail aligned' : '';
  return { rule: { ok: true, policy, temporary: false, detail: `p=${policy} at ${where}${advice}` }, tags };
}

function dkimOf(b: DomainBundle): Rule {
  const key = b.keys.find((k) => k.status === 'active' && k.role === 'primary');
  if (!key) return { ok: false, detail: 'no active DKIM key' };
  const check = b.checks.find((c) => c.record === `dkim:${key.selector}`);
  if (check?.state === 'verified') return { ok: true, detail: `signed with d=${b.domain.name} (selector ${key.selector}), the From domain itself` };
  return { ok: false, detail: `mail is signed with d=${b.domain.name}, but the record ${key.selector}._domainkey.${b.domain.name} is ${check?.state ?? 'not checked yet'}: publish it and verify` };
}

function spfOf(config: Config, domain: string, strict: boolean): Rule {
  const envelope = bounceHost(config);
  const aligned = strict ? envelope === domain : Boolean(getAlignment(domain, [envelope], false));
  if (aligned) return { ok: true, detail: `the envelope sender's domain ${envelope} is aligned with ${domain}${strict ? ' (aspf=s)' : ''}` };
  return {
    ok: false,
    detail: `the envelope sender's domain is ${envelope} (delivery.bounceDomain), not ${strict ? domain : `under ${domain}'s organisational domain`}: ` +
      'SPF passes for it but does not align; DKIM alignment is enough for DMARC',
  };
}

function oneClickOf(config: Config): SenderRules['oneClickUnsubscribe'] {
  const tags = config.messages.bulkTags;
  if (!tags.length) return { ok: false, bulkTags: tags, detail: 'messages.bulkTags is empty: no message gets one-click unsubscribe unless it asks (list_unsubscribe)' };
  return { ok: true, bulkTags: tags, detail: `messages tagged ${tags.join(', ')} get List-Unsubscribe and List-Unsubscribe-Post (one-click) unless they set list_unsubscribe false` };
}

export async function senderRules(resolver: DnsResolver, config: Config, b: DomainBundle): Promise<SenderRules> {
  const { rule: dmarc, tags } = await dmarcOf(resolver, b.domain.name);
  const dkimAligned = dkimOf(b);
  const spfAligned = spfOf(config, b.domain.name, tags.get('aspf')?.toLowerCase() === 's');
  const oneClickUnsubscribe = oneClickOf(config);
  return { meets: dmarc.ok && (dkimAligned.ok || spfAligned.ok) && oneClickUnsubscribe.ok, dkimAligned, spfAligned, dmarc, oneClickUnsubscribe };
}
