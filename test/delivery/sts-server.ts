/*
 * A loopback HTTPS server standing in for the policy hosts
 * https://mta-sts.<domain>/.well-known/mta-sts.txt of several domains at once:
 * it answers by Host header, with a certificate the test CA issued for those
 * names, and records every request.
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export interface StsServer {
  port: number;
  /** policy text served for a domain (the part after mta-sts.) */
  policies: Map<string, string>;
  /** Host headers of the requests received, in order */
  requests: string[];
  close(): Promise<void>;
}

export async function startStsServer(certificate: { key: string; cert: string }): Promise<StsServer> {
  const policies = new Map<string, string>();
  const requests: string[] = [];
  const server = https.createServer(certificate, (req, res) => {
    const host = String(req.headers.host ?? '').replace(/:\d+$/, '');
    requests.push(host);
    const policy = policies.get(host.replace(/^mta-sts\./, ''));
    if (req.url !== '/.well-known/mta-sts.txt' || policy === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end(policy);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    policies,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** A policy file as RFC 8461 §3.2 writes it (CRLF lines). */
export function policyText(mode: 'enforce' | 'testing' | 'none', mx: string[], maxAge = 86_400): string {
  return ['version: STSv1', `mode: ${mode}`, ...mx.map((m) => `mx: ${m}`), `max_age: ${maxAge}`, ''].join('\r\n');
}
