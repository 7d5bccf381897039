/**
 * The outbound path for one claimed message, as a flat list of named steps.
 * Each step either hands on to the next or ends the processing with an
 * outcome; the record step (record.ts) then writes that outcome. SMTP and DNS
 * failures are outcomes, not exceptions: only bugs throw.
 *
 *   suppressed?  → suppressed (never connects)
 *   prepare      → tracking hook, DKIM signature (content.ts), stored once
 *   sandbox?     → the sandbox transport answers instead of the network
 *   resolveMx    → MX hosts, or bounce (null MX, NXDOMAIN) / defer (SERVFAIL)
 *   tlsPolicy    → MTA-STS (tls-policy/): enforce keeps the policy's MX hosts and
 *                  requires verified TLS, or defers when none matches
 *   pickSource   → pool address + EHLO name for this destination, or wait (not an attempt)
 *   transmit     → SMTP over a pooled connection (transmit.ts); once a connection
 *                  is ready, right before MAIL FROM, a job whose lease ran out
 *                  (checked in memory: nothing cancels a leased row, and the
 *                  outcome write is conditional on the lease) is not sent
 *   settled      → the source step hears how it went (warm-up counts, throttling)
 *   classify     → delivered / deferred / bounced hard|soft + category
 */
import { isSuppressed } from '../suppressions/store';
import type { Queryable } from '../db';
import type { Clock } from '../clock';
import type { BounceClass, Reply } from './classify';
import type { Prepared } from './content';
import type { MxResolver, MxResult } from './mx';
import type { PickSource, SourceSettled } from './source';
import type { Transmit } from './transmit';
import { routeFor } from '../tls-policy/session';
import type { PlanFor } from '../tls-policy/resolver';
import type { AttemptInfo, Job, Outcome, SmtpOutcome } from './types';

export interface PipelineDeps {
  db: Queryable;
  clock: Clock;
  prepare: (job: Job) => Promise<Prepared>;
  pickSource: () => PickSource;
  sourceSettled: () => SourceSettled;
  mx: MxResolver;
  tlsPolicy: PlanFor;
  transmit: Transmit;
  sandbox: (job: Job, raw: Buffer) => Promise<SmtpOutcome>;
  classify: (reply: Reply) => BounceClass;
}

export async function deliver(job: Job, deps: PipelineDeps): Promise<Outcome> {
  const suppressed = job.preloaded ? job.preloaded.suppressed : await isSuppressed(deps.db, job.accountId, job.toEmail);
  if (suppressed) return { kind: 'suppressed' };
  const content = await deps.prepare(job);
  if ('missing' in content) return { kind: 'failed', diagnostic: 'message content is missing' };
  if (job.mode === 'test') return classify(await deps.sandbox(job, content.raw), deps.classify);
  const startedAt = deps.clock.now();
  const mx = await deps.mx.resolve(job.recipientDomain);
  if (mx.kind !== 'hosts') return dnsOutcome(mx, { startedAt, durationMs: deps.clock.now() - startedAt, sourceIp: null });
  const tls = routeFor(await deps.tlsPolicy(job.recipientDomain), mx.hosts);
  if (tls.kind === 'defer') {
    const attempt: AttemptInfo = { startedAt, durationMs: deps.clock.now() - startedAt, sourceIp: null, mx: null, tls: false, code: null, enhancedCode: null, response: tls.diagnostic, ...tls.facts };
    return { kind: 'deferred', attempt, diagnostic: tls.diagnostic };
  }
  const source = await deps.pickSource()(job, { hosts: tls.hosts, addresses: (host, family) => deps.mx.addresses(host, family) });
  if ('wait' in source) return { kind: 'wait', reason: source.wait, retryAt: source.retryAt };
  let sent: SmtpOutcome | 'not ours' | undefined;
  try {
    sent = await deps.transmit(job, content.raw, source, tls.hosts, async () => deps.clock.now() < job.leaseExpiresAt, tls.security);
  } finally {
    await deps.sourceSettled()(job, source, sent === undefined || sent === 'not ours' ? null : sent);
  }
  if (sent === 'not ours') return { kind: 'dropped', reason: 'the lease ran out before sending' };
  return classify(sent, deps.classify);
}

/** 2xx delivered, 4xx deferred, 5xx bounced with the rules' type and category. */
export function classify(o: SmtpOutcome, rules: (reply: Reply) => BounceClass): Outcome {
  const { kind, notAboutAddress, complaint, refusedByPolicy, ...attempt } = o;
  if (kind === 'delivered') return { kind, attempt, ...(complaint ? { complaint } : {}) };
  if (kind === 'deferred') return { kind, attempt, diagnostic: o.response };
  // Our own refusal says nothing about the address: not suppressed.
  const rule: BounceClass = refusedByPolicy ? { type: 'hard', category: 'policy', suppress: false } : rules(o);
  return {
    kind: 'bounced',
    attempt,
    bounce: {
      type: rule.type,
      category: rule.category,
      suppress: rule.suppress && !notAboutAddress,
      code: o.code,
      enhancedCode: o.enhancedCode,
      diagnostic: o.response,
    },
  };
}

/** A DNS answer that ends the attempt: null MX / NXDOMAIN bounce hard (category dns), the rest defers. */
function dnsOutcome(mx: Exclude<MxResult, { kind: 'hosts' }>, at: Pick<AttemptInfo, 'startedAt' | 'durationMs' | 'sourceIp'>): Outcome {
  const attempt: AttemptInfo = { ...at, mx: null, tls: false, code: null, enhancedCode: null, response: mx.diagnostic };
  if (mx.kind === 'defer') return { kind: 'deferred', attempt, diagnostic: mx.diagnostic };
  return {
    kind: 'bounced',
    attempt: { ...attempt, code: mx.code, enhancedCode: mx.enhancedCode },
    bounce: { type: 'hard', category: 'dns', suppress: true, code: mx.code, enhancedCode: mx.enhancedCode, diagnostic: mx.diagnostic },
  };
}
