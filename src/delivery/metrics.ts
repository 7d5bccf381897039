/**
 * What the MTA shows on /metrics: queue depth by status (read from the
 * database at scrape time, so it is true after a restart), deliveries by
 * result, open SMTP connections, and accept-to-delivery latency.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface DeliveryMetrics {
  deliveries: Counter<'result'>;
  connections: Gauge;
  connectionsOpened: Counter;
  latency: Histogram;
}

export function createDeliveryMetrics(registry: Registry, queueDepth: () => Promise<Record<string, number>>): DeliveryMetrics {
  new Gauge({
    name: 'pigeon_queue_messages',
    help: 'Messages in the delivery queue by status (scheduled, queued, deferred, sending)',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const depth = await queueDepth();
      this.reset();
      for (const status of ['scheduled', 'queued', 'deferred', 'sending']) this.set({ status }, depth[status] ?? 0);
    },
  });
  return {
    deliveries: new Counter({
      name: 'pigeon_deliveries_total',
      help: 'Delivery attempts by result: delivered, deferred, bounced_hard, bounced_soft, suppressed, waiting',
      labelNames: ['result'],
      registers: [registry],
    }),
    connections: new Gauge({ name: 'pigeon_smtp_connections', help: 'Open outbound SMTP connections', registers: [registry] }),
    connectionsOpened: new Counter({ name: 'pigeon_smtp_connections_opened_total', help: 'Outbound SMTP connections opened', registers: [registry] }),
    latency: new Histogram({
      name: 'pigeon_delivery_latency_seconds',
      help: 'From acceptance (or send_at) to delivery',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600],
      registers: [registry],
    }),
  };
}
