/**
 * The delivery pipeline's `prepareContent` hook: what the MTA calls on a
 * message that asks for tracking or List-Unsubscribe, before DKIM signing.
 * Wiring: `new Mta(deps, { prepareContent: trackingHook(deps.config) })`.
 */
import type { Config } from '../config';
import { instrumentMessage } from './instrument';
import { trackingKey } from './tokens';

/** The fields of a delivery job the hook reads (the MTA's Job has them all). */
export interface TrackableJob {
  id: string;
  accountId: string;
  toEmail: string;
  trackOpens: boolean;
  trackClicks: boolean;
  listUnsubscribe: boolean;
}

export function trackingHook(config: Config): (job: TrackableJob, raw: Buffer) => Promise<Buffer> {
  const key = trackingKey(config.dataDir);
  return (job, raw) =>
    instrumentMessage(raw, {
      messageId: job.id,
      accountId: job.accountId,
      trackOpens: job.trackOpens,
      trackClicks: job.trackClicks,
      listUnsubscribe: job.listUnsubscribe,
      recipient: job.toEmail,
      publicUrl: config.http.publicUrl,
      key,
    });
}
