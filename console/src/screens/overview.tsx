/** Overview: today and 30 days, a daily chart, queue depth, deferred by destination, warm-up, alerts. */
import { api } from '../api/client';
import type { Counts, Overview as Data } from '../api/types';
import { DailyChart } from '../components/chart';
import { Card, Empty, ErrorNotice, Notice, Page } from '../components/ui';
import { useAsync } from '../components/use-async';

const METRICS: Array<[keyof Counts, string, string]> = [
  ['sent', 'Sent', '#1d4ed8'], ['delivered', 'Delivered', '#047857'], ['bounced', 'Bounced', '#b91c1c'],
  ['complained', 'Complained', '#9a3412'], ['opened', 'Opened', '#6d28d9'],
];

export function Overview() {
  const o = useAsync(() => api.get<Data>('/v1/overview'), [], 15000);
  const d = o.data;
  return (
    <Page title="Overview">
      <ErrorNotice error={o.error} />
      {d && (
        <>
          {d.alerts.length > 0 && (
            <section aria-label="Alerts" class="alerts">
              {d.alerts.map((a, i) => <Notice kind="warning" key={i}><strong>{alertTitle(a.kind)}: {a.subject}</strong> — {a.detail}</Notice>)}
            </section>
          )}
          <div class="stats" role="list" aria-label="Today and the last 30 days">
            {METRICS.map(([k, label]) => (
              <div class="stat" role="listitem" key={k}>
                <span class="stat-label">{label}</span>
                <span class="stat-value">{d.today[k].toLocaleString()}</span>
                <span class="stat-sub">{d.last_30_days[k].toLocaleString()} in 30 days</span>
              </div>
            ))}
          </div>
          <Card title="Last 30 days">
            <DailyChart title="Messages per day over the last 30 days" days={d.daily.map((x) => x.date)}
              series={METRICS.map(([k, label, color]) => ({ label, color, values: d.daily.map((x) => x[k]) }))} />
          </Card>
          <div class="two-col">
            <Card title="Queue">
              <dl class="facts">
                <dt>Queued</dt><dd>{d.queue.queued}</dd><dt>Deferred</dt><dd>{d.queue.deferred}</dd><dt>Scheduled</dt><dd>{d.queue.scheduled}</dd>
              </dl>
              <h3>Deferred by destination</h3>
              {d.deferred_by_destination.length === 0 ? <Empty>Nothing deferred.</Empty> : (
                <table class="list"><tbody>{d.deferred_by_destination.map((x) => <tr key={x.domain}><th scope="row">{x.domain}</th><td>{x.count}</td></tr>)}</tbody></table>
              )}
            </Card>
            <Card title="Warm-up">
              {d.warmup.length === 0 ? <Empty>No address is warming up.</Empty> : (
                <table class="list"><thead><tr><th scope="col">Address</th><th scope="col">Day</th><th scope="col">Sent / cap</th></tr></thead>
                  <tbody>{d.warmup.map((w) => (
                    <tr key={w.ip}><td>{w.ip} <span class="muted small">{w.pool}</span></td><td>{w.day ?? '—'}</td>
                      <td><progress max={w.cap ?? 1} value={Math.min(w.sent_today, w.cap ?? w.sent_today)} aria-label={`${w.ip} sent today`} /> {w.sent_today} / {w.cap ?? '∞'}</td></tr>
                  ))}</tbody></table>
              )}
            </Card>
          </div>
        </>
      )}
    </Page>
  );
}

function alertTitle(kind: string): string {
  return ({ domain_dns: 'Domain DNS failing', ip_throttled: 'IP throttled', webhook_failing: 'Webhook failing' } as Record<string, string>)[kind] ?? kind;
}
