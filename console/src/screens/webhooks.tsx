/** Webhooks: create with an event picker (secret shown once), test, delivery log, redeliver one or all failed. */
import { useState } from 'preact/hooks';
import { api, query } from '../api/client';
import type { Page as ApiPage, Webhook, WebhookDelivery } from '../api/types';
import { href, navigate } from '../router';
import { ActionButton, Badge, Card, CopyButton, Empty, ErrorNotice, Field, Notice, Page, Select, Time } from '../components/ui';
import { errorText, useAsync } from '../components/use-async';

/** The event types of src/events/schemas.ts. */
export const EVENT_TYPES = ['message.queued', 'message.sent', 'message.delivered', 'message.bounced', 'message.complained', 'message.opened', 'message.clicked'];

export function Webhooks({ selected }: { selected?: string }) {
  const list = useAsync(() => api.get<ApiPage<Webhook>>('/v1/webhooks?limit=100'), []);
  const [created, setCreated] = useState<Webhook | null>(null);
  return (
    <Page title="Webhooks">
      <CreateWebhook onCreated={async (w) => { setCreated(w); await list.reload(); }} />
      {created?.secret && (
        <Notice kind="success">
          Webhook created. Its signing secret is shown only this once: <code class="secret">{created.secret}</code> <CopyButton text={created.secret} label="Copy secret" />
        </Notice>
      )}
      <ErrorNotice error={list.error} />
      {list.data?.data.length === 0 && <Empty>No webhooks yet.</Empty>}
      {list.data && list.data.data.length > 0 && (
        <div class="table-wrap"><table class="list" aria-label="Webhooks">
          <thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Mode</th><th scope="col">Enabled</th></tr></thead>
          <tbody>{list.data.data.map((w) => (
            <tr key={w.id}><td><a href={href('webhooks', w.id)}>{w.url}</a></td><td>{w.events.join(', ')}</td><td>{w.mode}</td><td>{w.enabled ? 'yes' : 'no'}</td></tr>
          ))}</tbody>
        </table></div>
      )}
      {selected && <WebhookDetail id={selected} onDeleted={async () => { await list.reload(); navigate('webhooks'); }} />}
    </Page>
  );
}

function CreateWebhook({ onCreated }: { onCreated(w: Webhook): Promise<void> }) {
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>(['message.delivered', 'message.bounced']);
  const [error, setError] = useState('');
  const toggle = (e: string) => setEvents(events.includes(e) ? events.filter((x) => x !== e) : [...events, e]);
  const submit = async (ev: Event) => {
    ev.preventDefault();
    setError('');
    try {
      await onCreated(await api.post<Webhook>('/v1/webhooks', { url, events }));
      setUrl('');
    } catch (err) { setError(errorText(err)); }
  };
  return (
    <Card title="New webhook">
      <form onSubmit={submit} aria-label="Create a webhook">
        <ErrorNotice error={error} />
        <Field label="Endpoint URL" type="url" required value={url} onInput={setUrl} placeholder="https://app.example.com/hooks/pigeon" />
        <fieldset class="checks"><legend>Events</legend>
          {EVENT_TYPES.map((e) => (
            <label key={e} class="check"><input type="checkbox" checked={events.includes(e)} onChange={() => toggle(e)} /> {e}</label>
          ))}
        </fieldset>
        <button type="submit" class="button primary" disabled={events.length === 0}>Create webhook</button>
      </form>
    </Card>
  );
}

function WebhookDetail({ id, onDeleted }: { id: string; onDeleted(): Promise<void> }) {
  const path = `/v1/webhooks/${encodeURIComponent(id)}`;
  const [status, setStatus] = useState('');
  const [result, setResult] = useState('');
  const deliveries = useAsync(() => api.get<ApiPage<WebhookDelivery>>(`${path}/deliveries${query({ status, limit: 50 })}`), [id, status], 5000);
  const test = async () => {
    const r = await api.post<{ success: boolean; status_code: number | null; error?: string; latency_ms: number }>(`${path}/test`);
    setResult(r.success ? `Test event delivered: HTTP ${r.status_code} in ${r.latency_ms} ms` : `Test event failed: ${r.error ?? `HTTP ${r.status_code}`}`);
    await deliveries.reload();
  };
  const redeliverFailed = async () => {
    const r = await api.post<{ queued: number }>(`${path}/redeliver-failed`);
    setResult(`${r.queued} failed deliveries queued again`);
    await deliveries.reload();
  };
  return (
    <Card title="Deliveries" id="webhook-detail">
      <div class="actions">
        <ActionButton onAction={test}>Send test event</ActionButton>
        <ActionButton kind="primary" onAction={redeliverFailed}>Redeliver all failed</ActionButton>
        <ActionButton kind="danger" confirm="Delete this webhook and its pending deliveries?" onAction={async () => { await api.del(path); await onDeleted(); }}>Delete webhook</ActionButton>
      </div>
      {result && <Notice>{result}</Notice>}
      <Select label="Delivery status" value={status} onChange={setStatus} options={[['', 'Any'], ['pending', 'pending'], ['succeeded', 'succeeded'], ['failed', 'failed']]} />
      <ErrorNotice error={deliveries.error} />
      {deliveries.data?.data.length === 0 && <Empty>No deliveries.</Empty>}
      {deliveries.data?.data.map((d) => <DeliveryRow key={d.id} webhookPath={path} delivery={d} onChanged={deliveries.reload} />)}
    </Card>
  );
}

function DeliveryRow({ webhookPath, delivery: d, onChanged }: { webhookPath: string; delivery: WebhookDelivery; onChanged(): Promise<void> }) {
  const [full, setFull] = useState<WebhookDelivery | null>(null);
  const load = async () => setFull(full ? null : await api.get<WebhookDelivery>(`${webhookPath}/deliveries/${encodeURIComponent(d.id)}`));
  const shown = full ?? d;
  return (
    <article class="delivery" aria-label={`Delivery ${d.id}`}>
      <h3><Badge value={d.status} /> {d.event_type} <span class="muted small">{d.id}</span> <Time iso={d.created_at} /></h3>
      <p class="small">{d.attempts} attempts · last answer {d.last_status_code != null ? `HTTP ${d.last_status_code}` : '—'}{d.last_error ? ` · ${d.last_error}` : ''}{d.next_attempt_at ? <> · next <Time iso={d.next_attempt_at} /></> : ''}</p>
      <div class="actions">
        <ActionButton onAction={load}>{full ? 'Hide details' : 'Request and response'}</ActionButton>
        <ActionButton onAction={async () => { await api.post(`${webhookPath}/deliveries/${encodeURIComponent(d.id)}/redeliver`); await onChanged(); }}>Redeliver</ActionButton>
      </div>
      {full && (
        <div class="delivery-detail">
          {shown.request_body !== undefined && <><h4>Request body</h4><pre>{pretty(shown.request_body)}</pre></>}
          <h4>Attempts</h4>
          {shown.attempt_log.map((a) => (
            <p key={a.attempt} class="small">#{a.attempt} <Time iso={a.attempted_at} /> · {a.success ? 'succeeded' : 'failed'} · HTTP {a.status_code ?? '—'} · {a.latency_ms ?? '?'} ms{a.error ? ` · ${a.error}` : ''}
              {a.response_body && <pre>{a.response_body}</pre>}</p>
          ))}
        </div>
      )}
    </article>
  );
}

/** The request body is the JSON string sent; indented for reading when it parses. */
function pretty(body: unknown): string {
  if (typeof body !== 'string') return JSON.stringify(body, null, 2);
  try { return JSON.stringify(JSON.parse(body), null, 2); } catch { return body; }
}
