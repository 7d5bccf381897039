/**
 * The values that flow through the delivery pipeline: a claimed job, the
 * source it leaves from, what the remote server said, and the outcome the
 * record step writes. SMTP outcomes are data; only bugs throw.
 */
import type { Mode } from '../auth/scopes';
import type { Tx } from '../db';
import type { BounceCategory, BounceType } from './classify';
import type { AddressFamily, AddressResult, MxHost } from './mx';

/** One claimed recipient copy (a `messages` row under our lease). */
export interface Job {
  id: string;
  accountId: string;
  mode: Mode;
  leaseOwner: string;
  /** when our lease on the row ends (ms); past it the row may be claimed again */
  leaseExpiresAt: number;
  contentId: string;
  fromEmail: string;
  toEmail: string;
  recipientDomain: string;
  sendingDomain: string;
  ipPool: string | null;
  trackOpens: boolean;
  trackClicks: boolean;
  listUnsubscribe: boolean;
  tags: string[];
  metadata: Record<string, string>;
  /** attempts recorded before this one */
  attempts: number;
  createdAt: number;
  sendAt: number | null;
  /** signed bytes made by the prepare step, written with the outcome (content.ts) */
  pendingContent?: ContentWrite;
  /**
   * Read with the other jobs of its claim (preload.ts): is the recipient suppressed, and the stored content
   * (null: there is none; undefined: not read with the batch, as large contents are not).
   */
  preloaded?: { suppressed: boolean; content?: { raw: Buffer; signed: boolean } | null };
}

/** A write the record step makes in its transaction on behalf of the prepare step. */
export interface ContentWrite {
  write(trx: Tx): Promise<void>;
  /** called once the outcome is recorded (or could not be) */
  settled?(): void;
}

/** Where a message leaves from: a configured address and its EHLO name. */
export interface Source {
  address: string;
  hostname: string;
}

export type SourceChoice = Source | { wait: string; retryAt: number };

/** What the source step knows of the destination: its MX hosts in order, and their addresses per family. */
export interface SourceRoute {
  hosts: MxHost[];
  addresses(host: string, family: AddressFamily): Promise<AddressResult>;
}

/** What one attempt looked like on the wire (a `message_attempts` row). */
export interface AttemptInfo {
  startedAt: number;
  durationMs: number;
  mx: string | null;
  sourceIp: string | null;
  tls: boolean;
  code: number | null;
  enhancedCode: string | null;
  response: string;
  /** The SMTP conversation (delivery/transcript.ts), when one took place. */
  transcript?: string | null;
}

/** What a transport (SMTP or sandbox) reports, before classification. */
export interface SmtpOutcome extends AttemptInfo {
  kind: 'delivered' | 'deferred' | 'bounced';
  /** set when the failure is about the message, not the address (e.g. over the remote SIZE) */
  notAboutAddress?: boolean;
  /** the MTA refused to dial the MX (a non-public address): a hard bounce of category policy */
  refusedByPolicy?: boolean;
  /** sandbox simulator: a complaint follows the delivery */
  complaint?: { feedbackType: string };
}

export interface Bounce {
  type: BounceType;
  category: BounceCategory;
  suppress: boolean;
  code: number | null;
  enhancedCode: string | null;
  diagnostic: string;
}

/** What the record step writes. */
export type Outcome =
  | { kind: 'delivered'; attempt: AttemptInfo; complaint?: { feedbackType: string } }
  | { kind: 'deferred'; attempt: AttemptInfo | null; diagnostic: string }
  /** attemptOutcome 'deferred': the attempt itself was a 4xx, but the queue lifetime is over */
  | { kind: 'bounced'; attempt: AttemptInfo | null; bounce: Bounce; attemptOutcome?: 'deferred' }
  | { kind: 'suppressed' }
  /** not an attempt: back to the queue until retryAt, attempts unchanged (e.g. no source available) */
  | { kind: 'wait'; reason: string; retryAt: number }
  /** cannot ever be sent (its content is gone): status failed, out of the queue */
  | { kind: 'failed'; diagnostic: string }
  /** the row is no longer ours (cancelled, lease lost): write nothing */
  | { kind: 'dropped'; reason: string };
