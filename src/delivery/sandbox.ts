/**
 * Transmit step of the pipeline (sandbox mode, test keys): nothing leaves the
 * machine. The message has been prepared and DKIM-signed exactly as in live
 * mode; this transport answers in place of a remote MX. Ordinary recipients are
 * delivered. Reserved addresses at `simulator.invalid` produce the other
 * outcomes so an application can exercise its webhook handling:
 *
 * - `bounce@`      550 5.1.1: hard bounce, the address is suppressed;
 * - `soft-bounce@` 452 4.2.2 (deferred), then 552 5.2.2: soft bounce;
 * - `complaint@`   delivered, then a `message.complained` (abuse) and suppression;
 * - `delay@`       451 4.4.1 twice, then delivered.
 *
 * A `+tag` is ignored (`bounce+42@simulator.invalid` bounces too), so tests can
 * use fresh addresses after the first bounce or complaint suppressed one.
 * Deferrals follow the live retry schedule in seconds instead of minutes (see
 * retry.ts), so `delay@` is delivered about 6 s after it was accepted.
 */
import type { Clock } from '../clock';
import { parseReply } from './classify';
import type { Job, SmtpOutcome } from './types';

export const SIMULATOR_DOMAIN = 'simulator.invalid';
const SANDBOX_MX = 'sandbox.pigeon.invalid';

type Script = (attempt: number) => { response: string; complaint?: boolean };

const SCRIPTS: Record<string, Script> = {
  bounce: () => ({ response: '550 5.1.1 simulator: no such user' }),
  'soft-bounce': (n) => ({ response: n === 1 ? '452 4.2.2 simulator: mailbox full, try later' : '552 5.2.2 simulator: mailbox full' }),
  complaint: () => ({ response: '250 2.0.0 simulator: accepted', complaint: true }),
  delay: (n) => ({ response: n <= 2 ? '451 4.4.1 simulator: try again later' : '250 2.0.0 simulator: accepted' }),
};

const DELIVERED: Script = () => ({ response: '250 2.0.0 sandbox: accepted, not delivered' });

export function createSandboxTransport(clock: Clock): (job: Job, raw: Buffer) => Promise<SmtpOutcome> {
  return async (job) => {
    const [local, domain] = splitAddress(job.toEmail);
    // bounce+anything@ works like bounce@, so repeated tests are not stopped by the suppression list
    const script = domain === SIMULATOR_DOMAIN ? (SCRIPTS[local.split('+')[0]] ?? DELIVERED) : DELIVERED;
    const { response, complaint } = script(job.attempts + 1);
    const reply = parseReply(response);
    const code = reply.code ?? 250;
    return {
      kind: code < 300 ? 'delivered' : code < 500 ? 'deferred' : 'bounced',
      ...reply,
      startedAt: clock.now(),
      durationMs: 0,
      mx: SANDBOX_MX,
      sourceIp: null,
      tls: false,
      ...(complaint ? { complaint: { feedbackType: 'abuse' } } : {}),
    };
  };
}

function splitAddress(email: string): [string, string] {
  const at = email.lastIndexOf('@');
  return [email.slice(0, at).toLowerCase(), email.slice(at + 1).toLowerCase()];
}
