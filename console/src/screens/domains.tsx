/** Sending domains: add, the DNS records with copy buttons and zone-file lines, live verify, DKIM rotation. */
import { useState } from 'preact/hooks';
import { api } from '../api/client';
import type { DnsRecord, Domain, Page as ApiPage } from '../api/types';
import { href, navigate } from '../router';
import { ActionButton, Badge, Card, CopyButton, Empty, ErrorNotice, Field, Page, Time } from '../components/ui';
import { errorText, useAsync } from '../components/use-async';

export function Domains({ selected }: { selected?: string }) {
  const list = useAsync(() => api.get<ApiPage<Domain>>('/v1/domains?limit=100'), []);
  const [name, setName] = useState('');
  const [error, setError] = useState('');
  const add = async (e: Event) => {
    e.preventDefault();
    setError('');
    try {
      const d = await api.post<Domain>('/v1/domains', { name });
      setName('');
      await list.reload();
      navigate('domains', d.name);
    } catch (err) { setError(errorText(err)); }
  };
  return (
    <Page title="Domains">
      <form class="inline-form" onSubmit={add} aria-label="Add a domain">
        <Field label="Domain name" value={name} onInput={setName} required placeholder="mail.example.com" />
        <button type="submit" class="button primary">Add domain</button>
      </form>
      <ErrorNotice error={error || list.error} />
      {list.data && list.data.data.length === 0 && <Empty>No domains yet. Add the domain you send from.</Empty>}
      {list.data && list.data.data.length > 0 && (
        <div class="table-wrap"><table class="list" aria-label="Domains">
          <thead><tr><th scope="col">Domain</th><th scope="col">Status</th><th scope="col">DKIM</th><th scope="col">Last checked</th></tr></thead>
          <tbody>{list.data.data.map((d) => (
            <tr key={d.id} aria-current={selected === d.name ? 'true' : undefined}>
              <td><a href={href('domains', d.name)}>{d.name}</a></td><td><Badge value={d.status} /></td>
              <td>{d.dkim?.algorithm}</td><td><Time iso={d.last_checked_at} /></td>
            </tr>
          ))}</tbody>
        </table></div>
      )}
      {selected && <DomainDetail name={selected} onChanged={list.reload} />}
    </Page>
  );
}

function DomainDetail({ name, onChanged }: { name: string; onChanged(): Promise<void> }) {
  const path = `/v1/domains/${encodeURIComponent(name)}`;
  const domain = useAsync(() => api.get<Domain>(path), [name]);
  const d = domain.data;
  const zone = d ? d.dns_records.map(zoneLine).join('\n') : '';
  const act = (suffix: string) => async () => {
    await api.post(`${path}${suffix}`);
    await domain.reload();
    await onChanged();
  };
  return (
    <Card title={`DNS records for ${name}`} id="domain-detail">
      <ErrorNotice error={domain.error} />
      {d && (
        <>
          <p>Status <Badge value={d.status} /> · verified <Time iso={d.verified_at} /> · checked <Time iso={d.last_checked_at} /></p>
          <div class="actions">
            <ActionButton kind="primary" onAction={act('/verify')}>Verify now</ActionButton>
            <ActionButton onAction={act('/dkim/rotate')} confirm="Create a new DKIM key? The current key keeps signing until the new record verifies.">Rotate DKIM key</ActionButton>
            <ActionButton kind="danger" confirm={`Delete ${name}? Live sends from it stop.`} onAction={async () => { await api.del(path); await onChanged(); navigate('domains'); }}>Delete domain</ActionButton>
          </div>
          <div class="records">
            {d.dns_records.map((r) => <RecordRow record={r} key={`${r.purpose}-${r.host}-${r.selector ?? ''}`} />)}
          </div>
          <h3>Zone file</h3>
          <pre class="zone" aria-label="Zone file lines">{zone}</pre>
          <CopyButton text={zone} label="Copy zone file lines" />
        </>
      )}
    </Card>
  );
}

function RecordRow({ record: r }: { record: DnsRecord }) {
  return (
    <article class="record" aria-label={`${r.purpose} record`}>
      <h3>{r.purpose.replace('_', ' ').toUpperCase()} <span class="muted">{r.type}</span> <Badge value={r.state} /> {!r.required && <span class="tag">optional</span>}</h3>
      <div class="kv"><span>Host</span><code>{r.host}</code><CopyButton text={r.host} label="Copy host" /></div>
      <div class="kv"><span>Value</span><code class="wrap">{r.value}</code><CopyButton text={r.value} label="Copy value" /></div>
      {r.detail && <p class="small">{r.detail}</p>}
      {r.found != null && <p class="small">Found: <code class="wrap">{Array.isArray(r.found) ? r.found.join(' | ') : String(r.found)}</code></p>}
    </article>
  );
}

/** One BIND zone-file line; TXT values are split into quoted strings of at most 255 characters (RFC 1035). */
export function zoneLine(r: DnsRecord): string {
  const host = `${r.host}.`;
  if (r.type === 'TXT') {
    const chunks = r.value.match(/.{1,255}/g) ?? [''];
    return `${host} 3600 IN TXT ${chunks.map((c) => `"${c.replace(/"/g, '\\"')}"`).join(' ')}`;
  }
  const value = /\.$/.test(r.value) ? r.value : `${r.value}.`;
  return `${host} 3600 IN ${r.type} ${value}`;
}
