/**
 * One bounded HTTPS request made on behalf of a recipient domain: the MTA-STS
 * policy fetch (GET) and an RFC 8460 report (POST). The host is resolved with
 * the configured resolver and only public addresses are dialled (the MTA's
 * rule, net/address-class.ts) unless `delivery.allowPrivateTargets` is set;
 * the connection goes to the checked address while SNI and the certificate
 * check use the name. One deadline covers connect, TLS and the answer,
 * redirects are answers (never followed), and the body read stops at
 * `maxBytes`. The outcome is data; only bugs throw.
 */
import https from 'node:https';
import net from 'node:net';
import type { Config } from '../config';
import { createResolver } from '../dns/resolver';
import { describeAddress, isPublicAddress } from '../net/address-class';
import { pinnedLookup } from '../webhooks/agents';

export interface HttpsRequest {
  url: URL;
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: Buffer;
  timeoutMs: number;
  maxBytes: number;
  /** trusted CAs (system roots plus delivery.tlsCaFile), undefined for the system roots */
  ca?: string[];
}

export type HttpsOutcome =
  | { ok: true; status: number; contentType: string; body: Buffer }
  | { ok: false; error: string };

export async function httpsRequest(config: Pick<Config, 'dns' | 'delivery'>, req: HttpsRequest): Promise<HttpsOutcome> {
  if (req.url.protocol !== 'https:') return { ok: false, error: `${req.url.protocol} is not https:` };
  const host = req.url.hostname.replace(/^\[(.*)\]$/, '$1');
  const address = await resolveAllowed(config, host);
  if ('error' in address) return address;
  return send(req, host, address.address);
}

async function resolveAllowed(config: Pick<Config, 'dns' | 'delivery'>, host: string): Promise<{ address: string } | { error: string; ok: false }> {
  let addresses: string[];
  if (net.isIP(host)) addresses = [host];
  else {
    const dns = createResolver(config);
    const found = await Promise.allSettled([dns.a(host), dns.aaaa(host)]);
    addresses = found.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
  }
  if (!addresses.length) return { ok: false, error: `${host} has no address` };
  const bad = addresses.find((a) => !isPublicAddress(a));
  if (bad && !config.delivery.allowPrivateTargets) {
    return { ok: false, error: `${host} resolves to ${describeAddress(bad)}; only public addresses are dialled (delivery.allowPrivateTargets)` };
  }
  return { address: addresses[0] };
}

function send(req: HttpsRequest, host: string, address: string): Promise<HttpsOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: HttpsOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve(outcome);
    };
    const request = https.request({
      host,
      port: req.url.port || 443,
      path: req.url.pathname + req.url.search,
      method: req.method,
      headers: { ...req.headers, ...(req.body ? { 'Content-Length': String(req.body.length) } : {}), Connection: 'close' },
      lookup: pinnedLookup(address, net.isIPv6(address) ? 6 : 4),
      agent: false,
      ...(net.isIP(host) ? {} : { servername: host }),
      ...(req.ca ? { ca: req.ca } : {}),
    });
    const timer = setTimeout(() => finish({ ok: false, error: `no answer within ${req.timeoutMs} ms` }), req.timeoutMs);
    request.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > req.maxBytes) return finish({ ok: false, error: `answer larger than ${req.maxBytes} bytes` });
        chunks.push(chunk);
      });
      res.on('end', () => finish({ ok: true, status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks) }));
      res.on('error', (err) => finish({ ok: false, error: err.message }));
    });
    request.on('error', (err: NodeJS.ErrnoException) => finish({ ok: false, error: err.code ? `${err.code}: ${err.message}` : err.message }));
    request.end(req.body);
  });
}
