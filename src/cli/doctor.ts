/**
 * `pigeon doctor`: checks what a sysadmin gets wrong most often and says how
 * to fix it. Each check is a named function returning ok/warn/fail with advice;
 * modules add their checks (DNS, PTR, TLS) to CHECKS.
 */
import net from 'node:net';
import type { Config } from '../config';
import type { CliContext } from './common';
import { checkDatabase } from './doctor-database';
import { checkPtr } from './doctor-ptr';
import { checkSmtpTls } from '../smtp/doctor';
import { checkWebhooks } from '../webhooks/doctor';
import { checkSourceAddresses } from '../delivery/doctor';
import { checkReputation } from '../reputation/doctor';
import { checkSecretKey, checkSenderRules } from '../domains/doctor';

export interface CheckResult {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  detail: string;
}

export type Check = (config: Config) => Promise<CheckResult[]>;

function portFree(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen(port, host, () => server.close(() => resolve(null)));
  });
}

async function checkPorts(config: Config): Promise<CheckResult[]> {
  const wanted: Array<[string, string, number]> = [
    ['http', config.http.host, config.http.port],
    ['smtp submission', config.smtp.submission.host, config.smtp.submission.port],
    ['smtp inbound', config.smtp.inbound.host, config.smtp.inbound.port],
    ...(config.smtp.relay.enabled ? [['smtp relay', config.smtp.relay.host, config.smtp.relay.port] as [string, string, number]] : []),
  ];
  const results: CheckResult[] = [];
  for (const [name, host, port] of wanted) {
    const problem = await portFree(host, port);
    if (!problem) results.push({ name: `port ${name}`, status: 'ok', detail: `${host}:${port} can be bound` });
    else if (problem === 'EADDRINUSE') results.push({ name: `port ${name}`, status: 'warn', detail: `${host}:${port} is in use (by a running pigeon, or something else)` });
    else if (problem === 'EACCES') results.push({ name: `port ${name}`, status: 'fail', detail: `${host}:${port} needs CAP_NET_BIND_SERVICE (see systemd/pigeon.service)` });
    else results.push({ name: `port ${name}`, status: 'fail', detail: `${host}:${port}: ${problem}` });
  }
  return results;
}

export const CHECKS: Check[] = [checkDatabase, checkPorts, checkPtr, checkReputation, checkSecretKey, checkSenderRules, checkSourceAddresses, checkWebhooks, (config) => checkSmtpTls(config)];

export async function doctorCommand(ctx: CliContext): Promise<void> {
  let failed = false;
  for (const check of CHECKS) {
    for (const r of await check(ctx.config)) {
      failed ||= r.status === 'fail';
      ctx.out(`${r.status.toUpperCase().padEnd(4)}  ${r.name}: ${r.detail}`);
    }
  }
  if (failed) process.exitCode = 1;
}
