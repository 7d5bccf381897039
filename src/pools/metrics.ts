/**
 * Prometheus metrics of the pools module. Counters count events as they
 * happen; the gauges read the database when /metrics is scraped, so they show
 * the state every process shares (warm-up day and cap, today's counts,
 * cool-downs in force).
 */
import { performance } from 'node:perf_hooks';
import { Counter, Gauge } from 'prom-client';
import type { AppDeps } from '../deps';
import { ratePerMinute } from './throttle';
import { ipStatuses } from './status';

export interface PoolMetrics {
  throttleReplies: Counter<'address' | 'destination' | 'reason'>;
  refusals: Counter<'limit'>;
}

export function createPoolMetrics(deps: Pick<AppDeps, 'db' | 'config' | 'clock' | 'metrics' | 'log'>): PoolMetrics {
  const registers = [deps.metrics.registry];
  // one database read per scrape, shared by the gauges below
  let last: { at: number; value: ReturnType<typeof ipStatuses> } | null = null;
  const snapshot = () => {
    if (!last || performance.now() - last.at > 500) {
      last = { at: performance.now(), value: ipStatuses(deps.db, deps.config, deps.config.ips.map((ip) => ip.address), deps.clock.now()) };
    }
    return last.value;
  };
  new Gauge({
    name: 'pigeon_ip_warmup_day',
    help: 'Day of the warm-up schedule of each warming source address (absent when warm)',
    labelNames: ['address', 'status'],
    registers,
    async collect() {
      this.reset();
      for (const s of (await snapshot()).values()) {
        if (s.warmup.day !== null) this.set({ address: s.address, status: s.warmup.status }, s.warmup.day);
      }
    },
  });
  new Gauge({
    name: 'pigeon_ip_warmup_cap',
    help: 'Today\'s warm-up cap of each warming source address (absent when warm)',
    labelNames: ['address'],
    registers,
    async collect() {
      this.reset();
      for (const s of (await snapshot()).values()) if (s.warmup.todayCap !== null) this.set({ address: s.address }, s.warmup.todayCap);
    },
  });
  new Gauge({
    name: 'pigeon_ip_sent_today',
    help: 'Messages attempted today (UTC) from each source address, per destination provider',
    labelNames: ['address', 'provider'],
    registers,
    async collect() {
      this.reset();
      for (const s of (await snapshot()).values()) {
        for (const [provider, n] of Object.entries(s.usage.byProvider)) this.set({ address: s.address, provider }, n);
      }
    },
  });
  new Gauge({
    name: 'pigeon_ip_throttle_level',
    help: 'Cool-down level of a source address toward a destination after throttling replies (absent when none)',
    labelNames: ['address', 'destination', 'reason'],
    registers,
    async collect() {
      this.reset();
      for (const s of (await snapshot()).values()) for (const t of s.throttles) this.set({ address: t.address, destination: t.destination, reason: t.reason }, t.level);
    },
  });
  new Gauge({
    name: 'pigeon_ip_throttle_rate_per_minute',
    help: 'Messages per minute allowed from a source address toward a cooling-down destination',
    labelNames: ['address', 'destination'],
    registers,
    async collect() {
      this.reset();
      for (const s of (await snapshot()).values()) {
        for (const t of s.throttles) this.set({ address: t.address, destination: t.destination }, ratePerMinute(t.level, deps.config.pools.throttle));
      }
    },
  });
  return {
    throttleReplies: new Counter({
      name: 'pigeon_ip_throttle_replies_total',
      help: 'Throttling replies (rate limited, reputation) received per source address and destination',
      labelNames: ['address', 'destination', 'reason'],
      registers,
    }),
    refusals: new Counter({
      name: 'pigeon_ip_send_refusals_total',
      help: 'Times a source address could not take a message (warm-up daily cap, provider budget, throttle)',
      labelNames: ['limit'],
      registers,
    }),
  };
}
