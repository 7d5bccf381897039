/**
 * /metrics of the reputation watch: gauges read from the stored results when
 * scraped (so they show what every process shares), one series per address
 * and DNSBL zone, and one per address for forward-confirmed reverse DNS.
 * Checks that never answered are absent, not 0.
 */
import { Gauge } from 'prom-client';
import type { AppDeps } from '../deps';
import { checksOf, FCRDNS } from './store';

export function createReputationMetrics(deps: Pick<AppDeps, 'db' | 'metrics'>): void {
  const registers = [deps.metrics.registry];
  new Gauge({
    name: 'pigeon_ip_dnsbl_listed',
    help: 'Whether each source address is listed (1) or not (0) on each DNSBL zone, as of the last check that answered',
    labelNames: ['address', 'zone'],
    registers,
    async collect() {
      this.reset();
      for (const checks of (await checksOf(deps.db)).values()) {
        for (const c of checks) if (c.check !== FCRDNS && c.state !== 'unknown') this.set({ address: c.address, zone: c.check }, c.state === 'listed' ? 1 : 0);
      }
    },
  });
  new Gauge({
    name: 'pigeon_ip_fcrdns_ok',
    help: 'Whether each source address has forward-confirmed reverse DNS naming its hostname (1) or not (0), as of the last check',
    labelNames: ['address'],
    registers,
    async collect() {
      this.reset();
      for (const checks of (await checksOf(deps.db)).values()) {
        for (const c of checks) if (c.check === FCRDNS && c.state !== 'unknown') this.set({ address: c.address }, c.state === 'ok' ? 1 : 0);
      }
    },
  });
}
