/**
 * One message: summary, actions (cancel a scheduled send, retry a deferred one
 * now), the content (HTML in a sandboxed frame: no scripts, and the console's
 * CSP, which the srcdoc frame inherits, loads nothing remote), the events
 * timeline and every attempt with its SMTP conversation.
 */
import { api } from '../api/client';
import type { MessageContent, MessageDetail as Detail } from '../api/types';
import { href } from '../router';
import { ActionButton, Badge, Card, Empty, ErrorNotice, Notice, Page, Time } from '../components/ui';
import { useAsync } from '../components/use-async';

export function MessageDetail({ id }: { id: string }) {
  const path = `/v1/messages/${encodeURIComponent(id)}`;
  const msg = useAsync(() => api.get<Detail>(path), [id], 5000);
  const m = msg.data;
  return (
    <Page title={m ? m.subject || '(no subject)' : 'Message'} actions={<a class="button" href={href('messages')}>Back to messages</a>}>
      <ErrorNotice error={msg.error} />
      {m && (
        <>
          <Card title="Summary">
            <dl class="facts">
              <dt>Status</dt><dd><Badge value={m.status} /></dd>
              <dt>ID</dt><dd><code>{m.id}</code></dd>
              <dt>From</dt><dd>{m.from.email}</dd>
              <dt>To</dt><dd>{m.to.email}</dd>
              <dt>Mode</dt><dd>{m.sandbox ? 'sandbox' : m.mode}</dd>
              <dt>Tags</dt><dd>{m.tags.join(', ') || '—'}</dd>
              <dt>Created</dt><dd><Time iso={m.created_at} /></dd>
              <dt>Send at</dt><dd><Time iso={m.send_at} /></dd>
              <dt>Last response</dt><dd>{m.last_response ?? '—'}</dd>
            </dl>
            <div class="actions">
              {m.status === 'scheduled' && <ActionButton kind="danger" confirm="Cancel this scheduled message?" onAction={async () => { await api.del(path); await msg.reload(); }}>Cancel send</ActionButton>}
              {m.status === 'deferred' && <ActionButton kind="primary" onAction={async () => { await api.post(`${path}/retry`); await msg.reload(); }}>Retry now</ActionButton>}
            </div>
          </Card>
          <Content path={path} />
          <Card title="Attempts">
            {m.attempts.length === 0 ? <Empty>No delivery attempt yet.</Empty> : m.attempts.map((a, i) => (
              <article class="attempt" key={i} aria-label={`Attempt ${i + 1}`}>
                <h3>Attempt {i + 1}: <Badge value={a.outcome} /> <Time iso={a.attempted_at} /></h3>
                <p>{a.mx_host ?? 'no host'}{a.source_ip ? ` from ${a.source_ip}` : ''} · {a.tls ? 'TLS' : 'no TLS'} · {a.duration_ms ?? '?'} ms</p>
                <p><code>{a.response ?? '—'}</code></p>
                {a.transcript ? (
                  <details open={i === m.attempts.length - 1}><summary>SMTP conversation</summary><pre class="transcript">{a.transcript}</pre></details>
                ) : <p class="muted small">No SMTP conversation was recorded for this attempt.</p>}
              </article>
            ))}
          </Card>
          <Card title="Events">
            {m.events.length === 0 ? <Empty>No events yet.</Empty> : (
              <ol class="timeline" aria-label="Events">
                {m.events.map((e) => (
                  <li key={e.id}><Badge value={e.type.replace(/^message\./, '')} /> <Time iso={e.created_at} />
                    <details><summary>Data</summary><pre>{JSON.stringify(e.data, null, 2)}</pre></details>
                  </li>
                ))}
              </ol>
            )}
          </Card>
        </>
      )}
    </Page>
  );
}

function Content({ path }: { path: string }) {
  const content = useAsync(() => api.get<MessageContent>(`${path}/content`), [path]);
  const c = content.data;
  return (
    <Card title="Content">
      {content.error && <Notice kind="warning">The content is not available: {content.error}</Notice>}
      {c && (
        <>
          {c.truncated && <Notice kind="info">The content is long: what is shown here is cut short.</Notice>}
          {c.html ? (
            <iframe class="preview" title="HTML preview" sandbox="" srcdoc={c.html} referrerpolicy="no-referrer" />
          ) : <Empty>No HTML part.</Empty>}
          {c.attachments && c.attachments.length > 0 && (
            <p class="small">Attachments: {c.attachments.map((a) => `${a.filename ?? '(no name)'} (${a.content_type}, ${a.size.toLocaleString()} bytes)`).join(', ')}</p>
          )}
          <details><summary>Text</summary><pre>{c.text ?? '(no text part)'}</pre></details>
          <details><summary>Headers ({c.headers.length})</summary>
            <div class="table-wrap"><table class="list"><tbody>
              {c.headers.map((h, i) => <tr key={i}><th scope="row">{h.name}</th><td class="wrap">{h.value}</td></tr>)}
            </tbody></table></div>
          </details>
        </>
      )}
    </Card>
  );
}
