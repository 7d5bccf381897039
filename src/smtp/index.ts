/**
 * The SMTP module (issue 7): the submission listener for applications that
 * relay with an API key, and the inbound listener for bounces (DSN) and
 * complaints (ARF). Wired in src/modules.ts as listeners; both share one
 * certificate (tls.ts). `checkSmtpTls` is a `pigeon doctor` check.
 */
import type { AppDeps } from '../deps';
import type { Listener } from '../modules';
import { startInbound } from './inbound';
import { startSubmission } from './submission';
import { loadTls } from './tls';

export { checkSmtpTls } from './doctor';
export { recordAsyncBounce, recordComplaint } from './inbound-outcomes';

export async function smtpListeners(deps: AppDeps): Promise<Listener[]> {
  const tls = await loadTls(deps.config, deps.clock.now());
  const submission = await startSubmission(deps, tls);
  try {
    return [submission, await startInbound(deps, tls)];
  } catch (err) {
    await submission.close();
    throw err;
  }
}
