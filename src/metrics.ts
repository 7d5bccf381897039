/**
 * Prometheus metrics. One registry per app instance (tests run several apps
 * in one process). Modules add their own metrics to `registry`.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from './config';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route'>;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'pigeon_' });
  return {
    registry,
    httpRequests: new Counter({
      name: 'pigeon_http_requests_total',
      help: 'HTTP requests by route template and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'pigeon_http_request_duration_seconds',
      help: 'HTTP request latency by route template',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
  };
}

/**
 * Metrics are served on their own listener (metrics.host:metrics.port,
 * loopback:9464 by default), never on the API port: they describe every
 * account's traffic and the API port faces customers. With metrics.token set,
 * a scrape must send "Authorization: Bearer <token>".
 */
export interface MetricsListener {
  name: 'metrics';
  host: string;
  server: http.Server;
  port: number;
  url: string;
  close(): Promise<void>;
}

export async function startMetricsListener(config: Config['metrics'], registry: Registry): Promise<MetricsListener> {
  const expected = config.token ? Buffer.from(`Bearer ${config.token}`) : undefined;
  const server = http.createServer((req, res) => {
    void serveMetrics(req, res, registry, expected);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    name: 'metrics',
    host: config.host,
    server,
    port,
    url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}/metrics`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

async function serveMetrics(req: http.IncomingMessage, res: http.ServerResponse, registry: Registry, expected: Buffer | undefined): Promise<void> {
  const path = (req.url ?? '').split('?')[0];
  if (path !== '/metrics') return answer(res, 404, 'not found: metrics are at /metrics\n');
  if (req.method !== 'GET' && req.method !== 'HEAD') return answer(res, 405, 'method not allowed\n', { Allow: 'GET, HEAD' });
  if (expected && !sameSecret(Buffer.from(req.headers.authorization ?? ''), expected)) {
    return answer(res, 401, 'a bearer token is required (metrics.token)\n', { 'WWW-Authenticate': 'Bearer' });
  }
  try {
    const body = await registry.metrics();
    answer(res, 200, req.method === 'HEAD' ? '' : body, { 'Content-Type': registry.contentType });
  } catch {
    answer(res, 500, 'metrics could not be collected\n');
  }
}

function answer(res: http.ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', ...headers });
  res.end(body);
}

const sameSecret = (given: Buffer, expected: Buffer): boolean => given.length === expected.length && crypto.timingSafeEqual(given, expected);
