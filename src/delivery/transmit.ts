/**
 * Transmit step of the pipeline (live mode): hand one signed message to the
 * recipient's MX over SMTP, from the chosen source address. MX hosts are tried
 * in order; a host that cannot be reached, refuses at the greeting or times out
 * passes the message to the next one. Once a host has answered the envelope,
 * its answer is the answer: 2xx delivered, 4xx deferred, 5xx bounced (the
 * classify step decides hard or soft). Everything comes back as a value.
 *
 * Only public addresses are dialled (net/address-class.ts, the webhook guard's
 * rules) unless `delivery.allowPrivateTargets` is set: a recipient domain must
 * not turn the MTA into a probe of the operator's network. A host whose every
 * address is private is skipped; when no host was dialled because of that,
 * the message hard-bounces with category policy, naming the address.
 *
 * MTA-STS (tls-policy/): under an enforce policy the hosts given are the
 * policy's, and each connection requires STARTTLS with a certificate valid
 * for the MX name; a handshake that fails is never retried in plain text, and
 * the deferral says why. Every attempt carries its TLS facts (version,
 * verified, mode applied, RFC 8460 result type of a shortfall).
 */
import { isAscii } from 'node:buffer';
import net from 'node:net';
import type { Clock } from '../clock';
import type { Config } from '../config';
import { describeAddress, isPublicAddress } from '../net/address-class';
import { parseReply } from './classify';
import type { MxHost, MxResolver } from './mx';
import { SmtpClient, type SmtpError } from './smtp-client';
import type { Lease, Route, SmtpPool } from './smtp-pool';
import type { Job, SmtpOutcome, Source } from './types';
import { failedSession, judge, NO_POLICY, type TlsFacts, type TransportSecurity } from '../tls-policy/session';
import { deliveryCas } from '../tls-policy/store';

export interface SmtpTransportDeps {
  config: Config;
  clock: Clock;
  pool: SmtpPool;
  mx: MxResolver;
  returnPath: (messageId: string) => string;
}

/**
 * `stillOurs` is asked once a connection is ready, right before MAIL FROM: a
 * wait for a connection slot may have outlasted the lease (the row may be
 * claimed again); then nothing is sent ('not ours').
 */
export type Transmit = (
  job: Job, raw: Buffer, source: Source, hosts: MxHost[], stillOurs: () => Promise<boolean>, security?: TransportSecurity,
) => Promise<SmtpOutcome | 'not ours'>;

/** A stale pooled connection (closed by the server while idle) is replaced this many times at most. */
const STALE_RETRIES = 3;

export function createSmtpTransport(deps: SmtpTransportDeps): Transmit {
  const ca = deliveryCas(deps.config.delivery.tlsCaFile); // a bad file stops the start, not every attempt
  return async (job, raw, source, hosts, stillOurs, security = NO_POLICY) => {
    const enforce = security.policy?.mode === 'enforce';
    const startedAt = deps.clock.now();
    const done = (o: Omit<SmtpOutcome, 'startedAt' | 'durationMs' | 'sourceIp'>): SmtpOutcome => ({
      ...o,
      startedAt,
      durationMs: deps.clock.now() - startedAt,
      sourceIp: source.address,
    });
    const family = net.isIPv6(source.address) ? 6 : 4;
    let last = {
      mx: null as string | null, response: `no MX host of ${job.recipientDomain} could be reached`, code: null as number | null, enhancedCode: null as string | null,
      transcript: null as string | null,
    };
    let lastTls: TlsFacts = { tlsPolicy: security.policy?.mode ?? null, tlsReportDomain: null };
    let refused: { mx: string; response: string } | undefined;
    let onlyRefused = true; // no host was dialled or failed to resolve for another reason
    for (const host of hosts) {
      const addresses = await deps.mx.addresses(host.name, family);
      if (addresses.kind === 'none') {
        last = { mx: host.name, response: addresses.diagnostic, code: null, enhancedCode: null, transcript: null };
        onlyRefused &&= !addresses.temporary;
        continue;
      }
      const dialable = deps.config.delivery.allowPrivateTargets ? addresses.addresses : addresses.addresses.filter(isPublicAddress);
      if (!dialable.length) {
        refused ??= { mx: host.name, response: privateTargetDiagnostic(job.recipientDomain, host.name, addresses.addresses[0]) };
        continue;
      }
      onlyRefused = false;
      const route: Route = { source: source.address, host: host.name, verified: enforce };
      const open = () => connectAny(deps.config, host.name, dialable, source, { tls: enforce ? 'verified' : 'opportunistic', ca });
      const lease = await deps.pool.acquire(route, open);
      if ('error' in lease) {
        last = { mx: host.name, ...describeError(lease.error), transcript: lease.error.transcript ?? null };
        if (enforce && lease.error.code === 'ETLS') {
          lastTls = failedSession(security, lease.error);
          last.response = `MTA-STS (enforce): verified TLS to ${host.name} failed (${lastTls.tlsFailure}: ${last.response}); not sent in plain text`;
        }
        continue; // unreachable, refused at the greeting, timed out: try the next MX host
      }
      if (enforce && !(lease.client.secure && lease.client.tlsSession.verified)) {
        // Belt and braces: whatever the client library did, enforce sends nothing over a session not verified.
        deps.pool.release(lease.client, false);
        last = { mx: host.name, code: null, enhancedCode: null, transcript: null, response: `MTA-STS (enforce): verified TLS to ${host.name} failed (session not verified); not sent in plain text` };
        continue;
      }
      if (!(await stillOurs())) {
        deps.pool.release(lease.client, true);
        return 'not ours';
      }
      const envelope = { from: deps.returnPath(job.id), to: job.toEmail, size: raw.length, use8BitMime: hasEightBit(raw) };
      const facts = (client: SmtpClient) => judge(security, host.name, client.tlsSession);
      return done({ mx: host.name, ...(await sendWithRetry(deps.pool, route, open, lease, envelope, raw, facts)) });
    }
    if (refused && onlyRefused) return done({ kind: 'bounced', tls: false, refusedByPolicy: true, code: 550, enhancedCode: '5.7.0', ...refused });
    return done({ kind: 'deferred', tls: false, ...lastTls, ...last });
  };
}

function privateTargetDiagnostic(domain: string, host: string, address: string): string {
  return `550 5.7.0 not dialled: MX ${host} of ${domain} resolves to ${describeAddress(address)}; delivery to non-public addresses is refused (delivery.allowPrivateTargets)`;
}

type Envelope = Parameters<SmtpClient['send']>[0];
type SendOutcome = Omit<SmtpOutcome, 'startedAt' | 'durationMs' | 'sourceIp' | 'mx'>;

/** Sends over the lease; a reused connection that turns out dead before the body went out is replaced. */
async function sendWithRetry(
  pool: SmtpPool, route: Route, open: () => ReturnType<typeof connectAny>, lease: Lease, envelope: Envelope, raw: Buffer, facts: (client: SmtpClient) => TlsFacts,
): Promise<SendOutcome> {
  for (let tries = 0; ; tries++) {
    if ('error' in lease) return { kind: 'deferred', tls: false, ...describeError(lease.error), transcript: lease.error.transcript ?? null };
    const { client, reused } = lease;
    const result = await client.send(envelope, raw);
    if (result.ok) {
      pool.release(client, true);
      return { kind: 'delivered', tls: client.secure, ...facts(client), ...parseReply(result.response), transcript: result.transcript };
    }
    const stale = reused && !result.dataSent && (!result.error.responseCode || result.error.responseCode === 421);
    if (stale && tries < STALE_RETRIES) {
      pool.release(client, false);
      lease = await pool.acquire(route, open);
      continue;
    }
    return { ...facts(client), ...(await settleFailure(pool, client, result.error)), transcript: result.transcript };
  }
}

/** A failed transaction: keep the connection when it is still in a known state (RSET succeeds). */
async function settleFailure(pool: SmtpPool, client: SmtpClient, error: SmtpError): Promise<SendOutcome> {
  const tls = client.secure;
  const code = error.responseCode;
  if (!code && error.code === 'EMESSAGE' && /larger than allowed/.test(error.message)) {
    // nodemailer refused before MAIL FROM: the message is over the SIZE the server advertised.
    pool.release(client, true);
    const response = `552 5.3.4 message of ${client.options.host} refused before sending: ${error.message}`;
    return { kind: 'bounced', tls, notAboutAddress: true, code: 552, enhancedCode: '5.3.4', response };
  }
  const usable = Boolean(code) && code !== 421 && !client.closed && (await client.reset());
  pool.release(client, usable);
  const described = describeError(error);
  if (!code || code < 500) return { kind: 'deferred', tls, ...described };
  return { kind: 'bounced', tls, ...described };
}

/** Tries each address of an MX host; a failed TLS handshake is retried in plain text unless verified TLS is required. */
async function connectAny(
  config: Config, host: string, addresses: string[], source: Source, security: { tls: 'opportunistic' | 'verified'; ca?: string[] },
): Promise<{ client: SmtpClient } | { error: SmtpError }> {
  const d = config.delivery;
  let last: { error: SmtpError } | undefined;
  for (const address of addresses) {
    const options = {
      host,
      address,
      port: d.port,
      localAddress: source.address,
      ehlo: source.hostname,
      tls: security.tls,
      ca: security.ca,
      connectTimeoutMs: d.connectTimeoutMs,
      greetingTimeoutMs: d.greetingTimeoutMs,
      commandTimeoutMs: d.commandTimeoutMs,
      dataTimeoutMs: d.dataTimeoutMs,
    };
    let result = await SmtpClient.open(options);
    if ('error' in result && result.error.code === 'ETLS' && security.tls === 'opportunistic') result = await SmtpClient.open({ ...options, tls: 'none' });
    if ('client' in result) return result;
    last = result;
  }
  return last ?? { error: Object.assign(new Error(`${host} has no address`), { code: 'EDNS' }) };
}

/** An error as the attempt records it: the server's reply when there was one, else what went wrong locally. */
function describeError(error: SmtpError): { code: number | null; enhancedCode: string | null; response: string } {
  if (error.response) return parseReply(error.response);
  return { code: null, enhancedCode: null, response: `${error.code ?? 'ERROR'}: ${error.message}` };
}

/** Node's native check: a byte loop in JS cost ~30 µs for a 5 KB message, on every attempt. */
function hasEightBit(raw: Buffer): boolean {
  return !isAscii(raw);
}
