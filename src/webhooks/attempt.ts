/**
 * One attempt, as a flat list of steps: check the target (SSRF guard, again,
 * because DNS may have changed since the URL was saved), sign the body, POST
 * it to the checked address. Used by the dispatcher for stored deliveries and
 * by POST /v1/webhooks/{id}/test for the synchronous test event.
 */
import fs from 'node:fs';
import tls from 'node:tls';
import type { Config } from '../config';
import type { EndpointAgents } from './agents';
import { postWebhook, SendOutcome } from './sender';
import { SIGNATURE_HEADER, signatureHeader } from './signature';
import { checkTarget } from './ssrf';

const VERSION: string = (require('../../../package.json') as { version: string }).version;
export const USER_AGENT = `Pigeon-Webhooks/${VERSION}`;

export interface AttemptInput {
  url: string;
  /** newest first; see signingSecrets() */
  secrets: string[];
  eventId: string;
  body: string;
  /** 1-based attempt number of this delivery */
  attempt: number;
  /** unix milliseconds; the signature's t is its whole seconds */
  now: number;
  signal?: AbortSignal;
}

type AttemptConfig = Pick<Config, 'dns' | 'webhooks'>;

// Keyed by the operator's CA file setting: one entry per configured file.
const caCache = new Map<string, string[]>();

/** System roots plus the operator's extra CA file (node's `ca` replaces the roots otherwise). */
function trustedCas(file: string): string[] | undefined {
  if (!file) return undefined;
  let cas = caCache.get(file);
  if (!cas) {
    cas = [...tls.rootCertificates, fs.readFileSync(file, 'utf8')];
    caCache.set(file, cas);
  }
  return cas;
}

/** Reads the CA file now, with an error that names the setting. */
export function checkCaFile(file: string): void {
  try {
    trustedCas(file);
  } catch (err) {
    throw new Error(`webhooks.tlsCaFile: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

export function requestHeaders(input: Pick<AttemptInput, 'secrets' | 'eventId' | 'body' | 'attempt' | 'now'>): Record<string, string> {
  return {
    'Content-Type': 'application/json',
    'User-Agent': USER_AGENT,
    [SIGNATURE_HEADER]: signatureHeader(input.secrets, Math.floor(input.now / 1000), input.body),
    'Service-Event-Id': input.eventId,
    'Service-Delivery-Attempt': String(input.attempt),
  };
}

/**
 * With `agents` the connection is kept alive for later attempts to the same
 * checked address; the guard still runs first, every time, so a name that now
 * resolves elsewhere gets a new connection, or none if the address is refused.
 */
export async function attemptDelivery(config: AttemptConfig, input: AttemptInput, agents?: EndpointAgents): Promise<SendOutcome> {
  const target = await checkTarget(input.url, config);
  if (!target.ok) {
    return { success: false, statusCode: null, latencyMs: 0, responseBody: null, error: target.message, aborted: false };
  }
  const { tlsCaFile, timeoutMs } = config.webhooks;
  const lease = agents?.acquire(target, tlsCaFile);
  try {
    return await postWebhook({
      target, headers: requestHeaders(input), body: input.body, timeoutMs, ca: trustedCas(tlsCaFile), signal: input.signal, agent: lease?.agent,
    });
  } finally {
    lease?.release();
  }
}
