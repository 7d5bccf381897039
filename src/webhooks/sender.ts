/**
 * One HTTP POST to a webhook receiver, after the SSRF guard has picked the
 * address. node:http/https are used directly (not fetch) because three things
 * must be under our control: the connection goes to the checked address (a
 * `lookup` that returns it, while Host, SNI and certificate checks still use
 * the URL's name), one deadline covers connect + TLS + answer, and redirects
 * are answers, never followed. The outcome is data; only bugs throw.
 *
 * With an agent (agents.ts: one per checked address) the connection is kept
 * alive for the next request to the same receiver; without one (the test
 * endpoint) it is closed after the answer, as before.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { pinnedLookup } from './agents';
import type { TargetCheck } from './ssrf';

export const RESPONSE_BODY_LIMIT = 1024;

export interface SendRequest {
  target: TargetCheck;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** extra trusted CAs (PEM), added to the system roots */
  ca?: string[];
  signal?: AbortSignal;
  /** a keep-alive agent for exactly target.address (EndpointAgents); none: one connection, closed after */
  agent?: http.Agent;
}

export interface SendOutcome {
  success: boolean;
  statusCode: number | null;
  latencyMs: number;
  /** first RESPONSE_BODY_LIMIT bytes of the answer, as text */
  responseBody: string | null;
  error: string | null;
  /** the request was aborted by shutdown: not an attempt at all */
  aborted: boolean;
  /** how long the attempt waited for its turn under the request limits before it started (send-thread.ts) */
  waitedMs?: number;
}

function describeError(err: NodeJS.ErrnoException): string {
  if (err.code === 'ECONNREFUSED') return 'connection refused';
  if (err.code === 'ECONNRESET') return 'connection reset by the receiver';
  if (err.code && /CERT|SELF_SIGNED|TLS|SSL/.test(err.code)) return `TLS error: ${err.code}`;
  return err.code ? `${err.code}: ${err.message}` : err.message;
}

/** A kept-alive socket the receiver closed as we sent: the request never reached it. */
const STALE_SOCKET = new Set(['ECONNRESET', 'EPIPE']);

function requestOptions(req: SendRequest, agent: http.Agent | undefined): https.RequestOptions {
  const { target } = req;
  const isHttps = target.url.protocol === 'https:';
  return {
    protocol: target.url.protocol,
    host: target.host,
    port: target.url.port || (isHttps ? 443 : 80),
    path: target.url.pathname + target.url.search,
    method: 'POST',
    headers: { ...req.headers, 'Content-Length': String(Buffer.byteLength(req.body)), ...(agent ? {} : { Connection: 'close' }) },
    lookup: pinnedLookup(target.address, target.family),
    agent: agent ?? false,
    // SNI carries names only (RFC 6066); the certificate is still checked against the URL's host.
    ...(isHttps && !net.isIP(target.host) ? { servername: target.host } : {}),
    ...(isHttps && req.ca?.length ? { ca: req.ca } : {}),
  };
}

export async function postWebhook(req: SendRequest): Promise<SendOutcome> {
  const first = await postOnce(req, req.agent);
  // A pooled socket can be closed by the receiver just as we reuse it; that is no answer, so try once on a new one.
  if (!first.staleSocket) return first;
  const retried = await postOnce({ ...req, timeoutMs: Math.max(1, req.timeoutMs - first.latencyMs) }, undefined);
  return { ...retried, latencyMs: retried.latencyMs + first.latencyMs };
}

function postOnce(req: SendRequest, agent: http.Agent | undefined): Promise<SendOutcome & { staleSocket?: boolean }> {
  const started = process.hrtime.bigint();
  const elapsed = () => Number((process.hrtime.bigint() - started) / 1_000_000n);
  const client = req.target.url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let statusCode: number | null = null;
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    let request: http.ClientRequest | undefined;
    let timer: NodeJS.Timeout | undefined;
    /** complete: the whole answer was read, so a kept-alive socket can go back to its pool */
    const finish = (error: string | null, aborted = false, complete = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (!complete) request?.destroy();
      const ok = !aborted && error === null && statusCode !== null && statusCode >= 200 && statusCode < 300;
      const body = chunks.length ? Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT).toString('utf8') : null;
      resolve({ success: ok, statusCode, latencyMs: elapsed(), responseBody: body ?? (statusCode === null ? null : ''),
        error: error ?? (ok ? null : statusError(statusCode)), aborted });
    };
    try {
      request = client.request(requestOptions(req, agent));
    } catch (err) {
      return finish(`invalid request: ${(err as Error).message}`); // e.g. a header node refuses
    }
    timer = setTimeout(() => finish(statusCode === null ? `timed out after ${req.timeoutMs} ms` : null), req.timeoutMs);
    request.on('response', (res) => {
      statusCode = res.statusCode ?? null;
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= RESPONSE_BODY_LIMIT) finish(null); // enough to show; the rest is not our business
      });
      res.on('end', () => finish(null, false, true));
      res.on('error', () => finish(null)); // the status is what counts once it arrived
    });
    request.on('error', (err: NodeJS.ErrnoException) => {
      if (!settled && statusCode === null && request?.reusedSocket && STALE_SOCKET.has(err.code ?? '')) {
        settled = true;
        clearTimeout(timer);
        return resolve({ success: false, statusCode: null, latencyMs: elapsed(), responseBody: null, error: describeError(err), aborted: false, staleSocket: true });
      }
      finish(statusCode === null ? describeError(err) : null);
    });
    if (req.signal?.aborted) return finish('aborted', true);
    req.signal?.addEventListener('abort', () => finish('aborted', true), { once: true });
    request.end(req.body);
  });
}

function statusError(statusCode: number | null): string {
  if (statusCode === null) return 'no response';
  if (statusCode >= 300 && statusCode < 400) return `redirect (HTTP ${statusCode}) not followed`;
  return `HTTP ${statusCode}`;
}
