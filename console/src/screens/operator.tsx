/** Operator (admins only): accounts, users, the queue by destination with pause/resume, `pigeon doctor` checks. */
import { useState } from 'preact/hooks';
import { api } from '../api/client';
import { ActionButton, Badge, Card, CopyButton, Empty, ErrorNotice, Field, Notice, Page, Select, Time } from '../components/ui';
import { errorText, useAsync } from '../components/use-async';

interface OpAccount { name: string; created_at: string; usage: Record<string, unknown>; messages_today: number }
interface OpUser { id: string; email: string; role: string; account: string | null; created_at?: string; disabled?: boolean; password_set?: boolean }
interface QueueRow { domain: string; queued: number; deferred: number; oldest_at: string | null; paused: boolean; last_error: string | null }
interface Check { name: string; ok: boolean; status?: 'ok' | 'warn' | 'fail'; detail: string }

export function Operator() {
  return (
    <Page title="Operator">
      <Queue />
      <div class="two-col"><Accounts /><Doctor /></div>
      <Users />
    </Page>
  );
}

function Queue() {
  const q = useAsync(() => api.get<{ data: QueueRow[] }>('/v1/operator/queue'), [], 5000);
  const act = (domain: string, action: 'pause' | 'resume') => async () => {
    await api.post(`/v1/operator/queue/${encodeURIComponent(domain)}/${action}`);
    await q.reload();
  };
  return (
    <Card title="Queue by destination">
      <ErrorNotice error={q.error} />
      {q.data?.data.length === 0 && <Empty>The queue is empty.</Empty>}
      {q.data && q.data.data.length > 0 && (
        <div class="table-wrap"><table class="list" aria-label="Queue by destination">
          <thead><tr><th scope="col">Destination</th><th scope="col">Queued</th><th scope="col">Deferred</th><th scope="col">Oldest</th><th scope="col">Last error</th><th scope="col"><span class="offscreen">Actions</span></th></tr></thead>
          <tbody>{q.data.data.map((r) => (
            <tr key={r.domain}><td>{r.domain} {r.paused && <Badge value="paused" />}</td><td>{r.queued}</td><td>{r.deferred}</td><td><Time iso={r.oldest_at} /></td><td class="small wrap">{r.last_error ?? '—'}</td>
              <td>{r.paused ? <ActionButton onAction={act(r.domain, 'resume')}>Resume</ActionButton> : <ActionButton onAction={act(r.domain, 'pause')}>Pause</ActionButton>}</td></tr>
          ))}</tbody>
        </table></div>
      )}
    </Card>
  );
}

function Accounts() {
  const a = useAsync(() => api.get<{ data: OpAccount[] }>('/v1/operator/accounts'), []);
  return (
    <Card title="Accounts">
      <ErrorNotice error={a.error} />
      {a.data && <table class="list" aria-label="Accounts"><thead><tr><th scope="col">Name</th><th scope="col">Today</th><th scope="col">Created</th></tr></thead>
        <tbody>{a.data.data.map((x) => <tr key={x.name}><td>{x.name}</td><td>{x.messages_today}</td><td><Time iso={x.created_at} /></td></tr>)}</tbody></table>}
    </Card>
  );
}

function Doctor() {
  const d = useAsync(() => api.get<{ checks: Check[] }>('/v1/operator/doctor'), []);
  return (
    <Card title="Doctor">
      <ErrorNotice error={d.error} />
      {!d.data && !d.error && <p class="muted">Running checks…</p>}
      {d.data && <ul class="checks-list" aria-label="Doctor checks">{d.data.checks.map((c) => (
        <li key={`${c.name} ${c.detail}`}><Badge value={c.status === 'warn' ? 'warning' : c.ok ? 'ok' : 'failed'} /> <strong>{c.name}</strong> <span class="small">{c.detail}</span></li>
      ))}</ul>}
      <ActionButton onAction={d.reload}>Run again</ActionButton>
    </Card>
  );
}

function Users() {
  const users = useAsync(() => api.get<{ data: OpUser[] }>('/v1/operator/users'), []);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState('member');
  const [account, setAccount] = useState('');
  const [link, setLink] = useState('');
  const [error, setError] = useState('');
  const create = async (e: Event) => {
    e.preventDefault();
    setError('');
    try {
      const r = await api.post<{ set_password_url: string }>('/v1/operator/users', { email, role, ...(account ? { account } : {}) });
      setLink(r.set_password_url);
      setEmail('');
      await users.reload();
    } catch (err) { setError(errorText(err)); }
  };
  return (
    <Card title="Users">
      <form class="inline-form" onSubmit={create} aria-label="Create a user">
        <Field label="User email" type="email" required value={email} onInput={setEmail} />
        <Select label="Role" value={role} onChange={setRole} options={[['member', 'member (one account)'], ['admin', 'admin (every account)']]} />
        <Field label="User account" value={account} onInput={setAccount} placeholder="default" />
        <button type="submit" class="button primary">Create user</button>
      </form>
      <ErrorNotice error={error || users.error} />
      {link && <Notice kind="success">Send this one-time link to the user (valid 24 hours): <code class="wrap">{link}</code> <CopyButton text={link} label="Copy link" /></Notice>}
      {users.data && <div class="table-wrap"><table class="list" aria-label="Users"><thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Account</th><th scope="col">Password</th><th scope="col"><span class="offscreen">Actions</span></th></tr></thead>
        <tbody>{users.data.data.map((u) => <tr key={u.id}><td>{u.email}</td><td>{u.role}</td><td>{u.account ?? '—'}</td><td>{u.password_set === false ? <Badge value="pending" /> : 'active'}</td>
          <td><ActionButton kind="danger" confirm={`Delete ${u.email}? Their sessions end at once.`} onAction={async () => { await api.del(`/v1/operator/users/${u.id}`); await users.reload(); }}>Delete</ActionButton></td></tr>)}</tbody></table></div>}
    </Card>
  );
}
