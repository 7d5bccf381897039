/** Suppressions: search by address prefix, add, remove, CSV upload with progress, export as CSV. */
import { useState } from 'preact/hooks';
import { api, query, upload } from '../api/client';
import type { Page as ApiPage, Suppression } from '../api/types';
import { ActionButton, Card, Empty, ErrorNotice, Field, Notice, Page, Time } from '../components/ui';
import { errorText, useAsync } from '../components/use-async';

/** Export stops after this many rows: the file is built in the browser's memory. */
const EXPORT_LIMIT = 100_000;

export function Suppressions() {
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  const list = useAsync(() => api.get<ApiPage<Suppression>>(`/v1/suppressions${query({ email: applied, limit: 100 })}`), [applied]);
  return (
    <Page title="Suppressions" actions={<ActionButton onAction={exportCsv}>Export CSV</ActionButton>}>
      <div class="two-col">
        <AddSuppression onAdded={list.reload} />
        <UploadCsv onDone={list.reload} />
      </div>
      <form class="inline-form" role="search" aria-label="Search suppressions" onSubmit={(e) => { e.preventDefault(); setApplied(search.trim().toLowerCase()); }}>
        <Field label="Address starts with" type="search" value={search} onInput={setSearch} />
        <button type="submit" class="button">Search</button>
      </form>
      <ErrorNotice error={list.error} />
      {list.data && <p class="muted small">{list.data.pagination.total} addresses{list.data.pagination.has_more ? ' (first 100 shown)' : ''}</p>}
      {list.data?.data.length === 0 && <Empty>No suppressed addresses.</Empty>}
      {list.data && list.data.data.length > 0 && (
        <div class="table-wrap"><table class="list" aria-label="Suppressed addresses">
          <thead><tr><th scope="col">Address</th><th scope="col">Reason</th><th scope="col">Added</th><th scope="col"><span class="offscreen">Actions</span></th></tr></thead>
          <tbody>{list.data.data.map((s) => (
            <tr key={s.id}><td>{s.email}</td><td>{s.reason}</td><td><Time iso={s.created_at} /></td>
              <td><ActionButton kind="small" confirm={`Remove ${s.email} from the list? Mail to it will be sent again.`} onAction={async () => { await api.del(`/v1/suppressions/${encodeURIComponent(s.email)}`); await list.reload(); }}>Remove</ActionButton></td></tr>
          ))}</tbody>
        </table></div>
      )}
    </Page>
  );
}

function AddSuppression({ onAdded }: { onAdded(): Promise<void> }) {
  const [email, setEmail] = useState('');
  const [reason, setReason] = useState('manual');
  const [error, setError] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    setError('');
    try {
      await api.post('/v1/suppressions', { suppressions: [{ email }], reason });
      setEmail('');
      await onAdded();
    } catch (err) { setError(errorText(err)); }
  };
  return (
    <Card title="Add an address">
      <form onSubmit={submit} aria-label="Add a suppression">
        <ErrorNotice error={error} />
        <Field label="Address to suppress" type="email" required value={email} onInput={setEmail} />
        <Field label="Reason" required value={reason} onInput={setReason} maxLength={100} />
        <button type="submit" class="button primary">Add</button>
      </form>
    </Card>
  );
}

interface UploadResult { received: number; added: number; already_present: number; duplicate?: number; invalid?: unknown[] }

function UploadCsv({ onDone }: { onDone(): Promise<void> }) {
  const [file, setFile] = useState<File | null>(null);
  const [reason, setReason] = useState('imported');
  const [progress, setProgress] = useState<number | null>(null);
  const [result, setResult] = useState<UploadResult | null>(null);
  const [error, setError] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!file) return;
    const form = new FormData();
    form.append('reason', reason);
    form.append('file', file);
    setError('');
    setResult(null);
    setProgress(0);
    try {
      setResult(await upload<UploadResult>('/v1/suppressions/upload', form, setProgress));
      await onDone();
    } catch (err) { setError(errorText(err)); } finally { setProgress(null); }
  };
  return (
    <Card title="Upload a CSV">
      <form onSubmit={submit} aria-label="Upload suppressions">
        <ErrorNotice error={error} />
        <div class="field">
          <label for="csv-file">CSV file</label>
          <input id="csv-file" type="file" accept=".csv,text/csv" required onChange={(e) => setFile((e.target as HTMLInputElement).files?.[0] ?? null)} />
          <small>One address per row, or a column named email; an optional reason column.</small>
        </div>
        <Field label="Reason for rows without one" required value={reason} onInput={setReason} maxLength={100} />
        <button type="submit" class="button primary" disabled={!file || progress !== null}>Upload</button>
        {progress !== null && <progress max={1} value={progress} aria-label="Upload progress">{Math.round(progress * 100)}%</progress>}
        {result && <Notice kind="success">Upload finished: {result.received} rows, {result.added} added, {result.already_present} already on the list{result.invalid?.length ? `, ${result.invalid.length} invalid` : ''}.</Notice>}
      </form>
    </Card>
  );
}

/** Pages through the list and hands the browser a CSV file (email,reason,created_at). */
async function exportCsv(): Promise<void> {
  const lines = ['email,reason,created_at'];
  let cursor: string | null = null;
  do {
    const page: ApiPage<Suppression> = await api.get(`/v1/suppressions${query({ limit: 100, cursor })}`);
    for (const s of page.data) lines.push([s.email, s.reason, s.created_at].map(csvField).join(','));
    cursor = page.pagination.has_more ? page.pagination.next_cursor : null;
  } while (cursor && lines.length <= EXPORT_LIMIT);
  const url = URL.createObjectURL(new Blob([lines.join('\n') + '\n'], { type: 'text/csv' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = 'suppressions.csv';
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function csvField(v: string): string {
  // A leading =, +, - or @ would be a formula in a spreadsheet: quote it with a leading apostrophe.
  const safe = /^[=+\-@]/.test(v) ? `'${v}` : v;
  return /[",\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}
