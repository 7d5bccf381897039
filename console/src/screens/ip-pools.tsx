/** IP pools: addresses, warm-up day/cap/sent today per address and provider, cool-downs; warm-up actions for admins only. */
import { api } from '../api/client';
import type { Page as ApiPage } from '../api/types';
import { ActionButton, Badge, Card, Empty, ErrorNotice, Page, Time } from '../components/ui';
import { useAsync } from '../components/use-async';

interface PoolIp {
  address: string; hostname: string | null; weight: number; family: string;
  warmup: { status: string; day: number | null; days: number | null; today_cap: number | null; allowed_by_now: number | null; provider_caps: Record<string, number> | null; started_at: string | null; paused_at: string | null };
  usage_today: { date: string; total: number; by_provider: Record<string, number> };
  throttles: Array<{ provider?: string; until?: string; reason?: string; [k: string]: unknown }>;
}
interface Pool { id: string; name: string; default: boolean; overflow: string; ips: PoolIp[] }

export function IpPools({ isAdmin }: { isAdmin: boolean }) {
  const pools = useAsync(() => api.get<ApiPage<Pool>>('/v1/ip-pools?limit=100'), [], 15000);
  const warmup = (name: string, action: string) => async () => {
    await api.post(`/v1/operator/ip-pools/${encodeURIComponent(name)}/warmup/${action}`);
    await pools.reload();
  };
  return (
    <Page title="IP pools">
      <ErrorNotice error={pools.error} />
      {pools.data?.data.length === 0 && <Empty>No pools.</Empty>}
      {pools.data?.data.map((p) => (
        <Card title={`Pool ${p.name}${p.default ? ' (default)' : ''}`} key={p.id}>
          <p class="small muted">When every address is at its cap: {p.overflow === 'queue' ? 'mail waits in the queue' : `overflow to pool ${p.overflow}`}</p>
          {isAdmin && (
            <div class="actions" aria-label={`Warm-up actions for ${p.name}`}>
              <ActionButton onAction={warmup(p.name, 'start')}>Start warm-up</ActionButton>
              <ActionButton onAction={warmup(p.name, 'pause')}>Pause warm-up</ActionButton>
              <ActionButton onAction={warmup(p.name, 'resume')}>Resume warm-up</ActionButton>
              <ActionButton kind="danger" confirm="Stop warm-up and mark these addresses warm (no cap)?" onAction={warmup(p.name, 'stop')}>Stop warm-up</ActionButton>
            </div>
          )}
          <div class="table-wrap"><table class="list" aria-label={`Addresses of ${p.name}`}>
            <thead><tr><th scope="col">Address</th><th scope="col">Warm-up</th><th scope="col">Day</th><th scope="col">Cap today</th><th scope="col">Sent today</th><th scope="col">By provider</th><th scope="col">Cool-downs</th></tr></thead>
            <tbody>{p.ips.map((ip) => (
              <tr key={ip.address}>
                <td><code>{ip.address}</code><div class="small muted">{ip.hostname}</div></td>
                <td><Badge value={ip.warmup.status} />{ip.warmup.paused_at && <div class="small">paused <Time iso={ip.warmup.paused_at} /></div>}</td>
                <td>{ip.warmup.day != null ? `${ip.warmup.day}${ip.warmup.days ? ` of ${ip.warmup.days}` : ''}` : '—'}</td>
                <td>{ip.warmup.today_cap ?? 'no cap'}</td>
                <td>{ip.usage_today.total}</td>
                <td class="small">{Object.entries(ip.usage_today.by_provider).map(([k, v]) => `${k}: ${v}${ip.warmup.provider_caps?.[k] != null ? ` / ${ip.warmup.provider_caps[k]}` : ''}`).join(', ') || '—'}</td>
                <td class="small">{ip.throttles.length === 0 ? 'none' : ip.throttles.map((t, i) => <div key={i}>{String(t.provider ?? '')} until <Time iso={t.until as string | undefined} /></div>)}</td>
              </tr>
            ))}</tbody>
          </table></div>
        </Card>
      ))}
    </Page>
  );
}
