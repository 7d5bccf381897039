/** The message log: filters, search, live refresh every 5 s, cursor paging. */
import { useState } from 'preact/hooks';
import { api, query } from '../api/client';
import type { Message, Page as ApiPage } from '../api/types';
import { href } from '../router';
import { Badge, Empty, ErrorNotice, Field, Page, Select, Time } from '../components/ui';
import { useAsync } from '../components/use-async';

const STATUSES = ['', 'scheduled', 'queued', 'sending', 'deferred', 'delivered', 'bounced', 'failed', 'suppressed', 'cancelled'];

interface Filters { q: string; status: string; to: string; from: string; tag: string; created_after: string; created_before: string }
const NO_FILTERS: Filters = { q: '', status: '', to: '', from: '', tag: '', created_after: '', created_before: '' };

export function Messages() {
  const [draft, setDraft] = useState<Filters>(NO_FILTERS);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const list = useAsync(() => api.get<ApiPage<Message>>(`/v1/messages${query({ ...toQuery(filters), limit: 25, cursor })}`), [filters, cursor], 5000);
  const set = (k: keyof Filters) => (v: string) => setDraft({ ...draft, [k]: v });
  const apply = (e: Event) => {
    e.preventDefault();
    setCursors([]);
    setFilters(draft);
  };
  const page = list.data;
  return (
    <Page title="Messages">
      <form class="filters" onSubmit={apply} role="search" aria-label="Filter messages">
        <Field label="Search" type="search" value={draft.q} onInput={set('q')} placeholder="subject, to or from" />
        <Select label="Status" value={draft.status} onChange={set('status')} options={STATUSES.map((s) => [s, s || 'Any'])} />
        <Field label="To" value={draft.to} onInput={set('to')} />
        <Field label="From" value={draft.from} onInput={set('from')} />
        <Field label="Tag" value={draft.tag} onInput={set('tag')} />
        <Field label="Created after" type="date" value={draft.created_after} onInput={set('created_after')} />
        <Field label="Created before" type="date" value={draft.created_before} onInput={set('created_before')} />
        <div class="field end"><button type="submit" class="button primary">Apply filters</button></div>
      </form>
      <ErrorNotice error={list.error} />
      <p class="muted small" aria-live="polite">{page ? `${page.pagination.total} messages · refreshes every 5 seconds` : 'Loading…'}</p>
      {page && page.data.length === 0 && <Empty>No messages match.</Empty>}
      {page && page.data.length > 0 && (
        <div class="table-wrap">
          <table class="list" aria-label="Messages">
            <thead><tr><th scope="col">Status</th><th scope="col">To</th><th scope="col">Subject</th><th scope="col">From</th><th scope="col">Created</th></tr></thead>
            <tbody>
              {page.data.map((m) => (
                <tr key={m.id}>
                  <td><Badge value={m.status} />{m.sandbox && <span class="tag">sandbox</span>}</td>
                  <td><a href={href('messages', m.id)}>{m.to.email}</a></td>
                  <td>{m.subject ?? <span class="muted">(no subject)</span>}</td>
                  <td>{m.from.email}</td>
                  <td><Time iso={m.created_at} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="pager">
        <button type="button" class="button" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>Newer</button>
        <button type="button" class="button" disabled={!page?.pagination.has_more} onClick={() => page?.pagination.next_cursor && setCursors([...cursors, page.pagination.next_cursor])}>Older</button>
      </div>
    </Page>
  );
}

function toQuery(f: Filters): Record<string, string> {
  return {
    ...f,
    created_after: f.created_after ? new Date(`${f.created_after}T00:00:00`).toISOString() : '',
    created_before: f.created_before ? new Date(`${f.created_before}T23:59:59.999`).toISOString() : '',
  };
}
