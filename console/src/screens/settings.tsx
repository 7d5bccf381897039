/** Settings: the IP allowlist and the account's usage (billing counter). */
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api/client';
import { Card, ErrorNotice, Notice, Page, Time } from '../components/ui';
import { errorText, useAsync } from '../components/use-async';

interface Account { id: string; name: string; created_at: string; usage: { month: string; billable_messages: number } }
interface Security { allowed_ips: string[]; updated_at: string | null }

export function Settings() {
  const account = useAsync(() => api.get<Account>('/v1/account'), []);
  const security = useAsync(() => api.get<Security>('/v1/settings/security'), []);
  const [text, setText] = useState('');
  const [saved, setSaved] = useState('');
  const [error, setError] = useState('');
  useEffect(() => { if (security.data) setText(security.data.allowed_ips.join('\n')); }, [security.data]);
  const save = async (e: Event) => {
    e.preventDefault();
    setError('');
    setSaved('');
    try {
      const allowed_ips = text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
      const r = await api.put<Security>('/v1/settings/security', { allowed_ips });
      setSaved(r.allowed_ips.length ? `Saved: ${r.allowed_ips.length} entries.` : 'Saved: every address may use the API.');
      await security.reload();
    } catch (err) { setError(errorText(err)); }
  };
  const a = account.data;
  return (
    <Page title="Settings">
      <Card title="Account and usage">
        <ErrorNotice error={account.error} />
        {a && <dl class="facts">
          <dt>Account</dt><dd>{a.name} <span class="muted small">{a.id}</span></dd>
          <dt>Created</dt><dd><Time iso={a.created_at} /></dd>
          <dt>Billable messages ({a.usage.month})</dt><dd class="big">{a.usage.billable_messages.toLocaleString()}</dd>
        </dl>}
      </Card>
      <Card title="IP allowlist">
        <form onSubmit={save} aria-label="IP allowlist">
          <ErrorNotice error={error || security.error} />
          {saved && <Notice kind="success">{saved}</Notice>}
          <div class="field">
            <label for="allowlist">Allowed addresses and ranges, one per line</label>
            <textarea id="allowlist" rows={6} value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} aria-describedby="allowlist-hint" />
            <small id="allowlist-hint">IPv4 or IPv6 addresses and CIDR ranges (203.0.113.0/24). Empty: every address may use the API. Last changed: <Time iso={security.data?.updated_at} /></small>
          </div>
          <button type="submit" class="button primary">Save allowlist</button>
        </form>
      </Card>
    </Page>
  );
}
