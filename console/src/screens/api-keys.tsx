/** API keys: create (the secret shown once), scopes, mode, last used, revoke. */
import { useState } from 'preact/hooks';
import { api } from '../api/client';
import type { ApiKey, Page as ApiPage } from '../api/types';
import { ActionButton, Badge, Card, CopyButton, Empty, ErrorNotice, Field, Notice, Page, Select, Time } from '../components/ui';
import { errorText, useAsync } from '../components/use-async';

const SCOPES = ['messages:send', 'messages:read', 'domains:manage', 'webhooks:manage', 'ip-pools:manage', 'analytics:read', 'account:read', 'suppressions:manage', 'account:manage'];

export function ApiKeys() {
  const list = useAsync(() => api.get<ApiPage<ApiKey>>('/v1/api-keys?limit=100'), []);
  const [name, setName] = useState('');
  const [mode, setMode] = useState('test');
  const [scopes, setScopes] = useState<string[]>(['messages:send', 'messages:read']);
  const [secret, setSecret] = useState('');
  const [error, setError] = useState('');
  const toggle = (s: string) => setScopes(scopes.includes(s) ? scopes.filter((x) => x !== s) : [...scopes, s]);
  const create = async (e: Event) => {
    e.preventDefault();
    setError('');
    try {
      const k = await api.post<ApiKey & { key: string }>('/v1/api-keys', { name, mode, scopes });
      setSecret(k.key);
      setName('');
      await list.reload();
    } catch (err) { setError(errorText(err)); }
  };
  return (
    <Page title="API keys">
      <Card title="New key">
        <form onSubmit={create} aria-label="Create an API key">
          <ErrorNotice error={error} />
          <Field label="Key name" required value={name} onInput={setName} maxLength={100} />
          <Select label="Mode" value={mode} onChange={setMode} options={[['test', 'test (sandbox: validated, not delivered)'], ['live', 'live (delivers mail)']]} />
          <fieldset class="checks"><legend>Scopes</legend>
            {SCOPES.map((s) => <label key={s} class="check"><input type="checkbox" checked={scopes.includes(s)} onChange={() => toggle(s)} /> {s}</label>)}
          </fieldset>
          <button type="submit" class="button primary" disabled={scopes.length === 0}>Create key</button>
        </form>
      </Card>
      {secret && <Notice kind="success">The new key is shown only this once: <code class="secret">{secret}</code> <CopyButton text={secret} label="Copy key" /></Notice>}
      <ErrorNotice error={list.error} />
      {list.data?.data.length === 0 && <Empty>No keys.</Empty>}
      {list.data && list.data.data.length > 0 && (
        <div class="table-wrap"><table class="list" aria-label="API keys">
          <thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Mode</th><th scope="col">Scopes</th><th scope="col">Last used</th><th scope="col"><span class="offscreen">Actions</span></th></tr></thead>
          <tbody>{list.data.data.map((k) => (
            <tr key={k.id}>
              <td>{k.name}</td><td><code>{k.prefix}…</code></td><td><Badge value={k.mode} /></td>
              <td class="small">{k.scopes.join(', ')}</td><td><Time iso={k.last_used_at} /></td>
              <td>{k.revoked ? <Badge value="revoked" /> : <ActionButton kind="danger" confirm={`Revoke ${k.name}? Requests with it fail at once.`} onAction={async () => { await api.del(`/v1/api-keys/${k.id}`); await list.reload(); }}>Revoke</ActionButton>}</td>
            </tr>
          ))}</tbody>
        </table></div>
      )}
    </Page>
  );
}
