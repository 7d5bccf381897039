/** Shared by the domains tests: publish what the API asked for into the loopback DNS zone. */
import type { TestDnsServer, RecordSpec } from '../support/dns-server';
import type { ApiClient } from '../support/app';

export interface RecordView {
  purpose: 'dkim' | 'spf' | 'dmarc' | 'return_path';
  type: 'TXT' | 'CNAME';
  host: string;
  value: string;
  required: boolean;
  state: string;
  found: string[] | null;
  detail: string | null;
  selector?: string;
  key_status?: 'active' | 'pending';
  key_role?: 'primary' | 'second';
}

export interface DomainBody {
  id: string;
  name: string;
  status: string;
  verified_at: string | null;
  last_checked_at: string | null;
  failing_since: string | null;
  grace_ends_at: string | null;
  dkim: { selector: string; algorithm: string } | null;
  dkim_ed25519?: { selector: string; status: 'active' | 'pending' } | null;
  dns_records: RecordView[];
}

export const record = (d: DomainBody, purpose: RecordView['purpose'], keyStatus: 'active' | 'pending' = 'active'): RecordView => {
  const found = d.dns_records.find((r) => r.purpose === purpose && (purpose !== 'dkim' || r.key_status === keyStatus));
  if (!found) throw new Error(`no ${purpose} record in ${JSON.stringify(d.dns_records)}`);
  return found;
};

/** A TXT value as 255-byte character-strings, as a DNS panel publishes a long record. */
export const chunks = (value: string, size = 255): string[] => value.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g')) ?? [];

/** Publishes the records of a domain as asked, except the purposes in `skip`. */
export function publish(dns: TestDnsServer, d: DomainBody, skip: Array<RecordView['purpose']> = []): void {
  const byHost = new Map<string, RecordSpec[]>();
  for (const r of d.dns_records) {
    if (skip.includes(r.purpose)) continue;
    const spec: RecordSpec = r.type === 'TXT' ? { type: 'TXT', data: chunks(r.value) } : { type: 'CNAME', data: r.value };
    byHost.set(r.host, [...(byHost.get(r.host) ?? []), spec]);
  }
  for (const [host, records] of byHost) dns.set(host, records);
}

export async function addDomain(api: ApiClient, name: string, extra: Record<string, unknown> = {}): Promise<DomainBody> {
  const res = await api.post('/v1/domains', { name, ...extra });
  if (res.status !== 201) throw new Error(`add ${name}: ${res.status} ${res.text}`);
  return res.body as DomainBody;
}

export async function verify(api: ApiClient, name: string): Promise<DomainBody> {
  const res = await api.post(`/v1/domains/${name}/verify`);
  if (res.status !== 200) throw new Error(`verify ${name}: ${res.status} ${res.text}`);
  return res.body as DomainBody;
}
