/**
 * The SMTP module (issue 7): the submission listener for applications that
 * relay with an API key, and the inbound listener for bounces (DSN) and
 * complaints (ARF), and the optional port-25 relay listener (relay by network,
 * no AUTH; off unless smtp.relay.enabled). Wired in src/modules.ts as listeners; both share one
 * certificate (tls.ts). `checkSmtpTls` is a `pigeon doctor` check.
 */
import type { AppDeps } from '../deps';
import type { Listener } from '../modules';
import { startInbound } from './inbound';
import { startRelayListener, startSubmission } from './submission';
import { loadTls } from './tls';

export { checkSmtpTls } from './doctor';
export { recordAsyncBounce, recordComplaint } from './inbound-outcomes';

export async function smtpListeners(deps: AppDeps): Promise<Listener[]> {
  const tls = await loadTls(deps.config, deps.clock.now());
  const started: Listener[] = [];
  try {
    started.push(await startSubmission(deps, tls));
    started.push(await startInbound(deps, tls));
    if (deps.config.smtp.relay.enabled) started.push(await startRelayListener(deps, tls));
    return started;
  } catch (err) {
    await Promise.all(started.map((l) => l.close()));
    throw err;
  }
}
