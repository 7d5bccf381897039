/**
 * `pigeon doctor` check for the MTA: every configured source address must
 * exist on this host, or every message of a pool using it defers with
 * EADDRNOTAVAIL. Binding a throwaway socket to each address is the test.
 */
import net from 'node:net';
import type { Config } from '../config';
import type { CheckResult } from '../cli/doctor';

function bindable(address: string): Promise<string | null> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen(0, address, () => server.close(() => resolve(null)));
  });
}

export async function checkSourceAddresses(config: Config): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const ip of config.ips) {
    const problem = await bindable(ip.address);
    const name = `source address ${ip.address}`;
    if (!problem) results.push({ name, status: 'ok', detail: `outbound SMTP can bind it (EHLO ${ip.hostname})` });
    else if (problem === 'EADDRNOTAVAIL') {
      results.push({ name, status: 'fail', detail: 'not an address of this host: add it to a network interface or remove it from "ips"' });
    } else results.push({ name, status: 'fail', detail: `cannot bind it: ${problem}` });
  }
  return results;
}
