/**
 * Doctor check: every sending IP in config `ips` must be an address of this
 * host, or outbound SMTP cannot bind to it (EADDRNOTAVAIL) and every message
 * routed through it is deferred. Binding a socket to port 0 on the address
 * proves the kernel will let the MTA use it as a source.
 */
import net from 'node:net';
import type { Config } from '../config';
import type { CheckResult } from './doctor';

function bindError(address: string): Promise<string | null> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen({ host: address, port: 0, exclusive: true }, () => server.close(() => resolve(null)));
  });
}

async function checkOne(ip: { address: string }): Promise<CheckResult> {
  const name = `bind ${ip.address}`;
  if (!net.isIP(ip.address)) return { name, status: 'fail', detail: `${ip.address} is not an IP address; fix config ips` };
  const problem = await bindError(ip.address);
  if (!problem) return { name, status: 'ok', detail: `${ip.address} is an address of this host; outbound SMTP can bind to it` };
  if (problem === 'EADDRNOTAVAIL') {
    return { name, status: 'fail', detail: `${ip.address} is not assigned to any interface of this host; add it (e.g. ip addr add ${ip.address}/32 dev eth0) or remove it from config ips` };
  }
  return { name, status: 'fail', detail: `cannot bind to ${ip.address}: ${problem}` };
}

export async function checkBindable(config: Config): Promise<CheckResult[]> {
  return Promise.all(config.ips.map((ip) => checkOne(ip)));
}
