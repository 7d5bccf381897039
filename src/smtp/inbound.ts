/**
 * The inbound listener (port 25 on a VPS, 127.0.0.1:2525 by default): the
 * bounce host of the VERP return-paths and the feedback-loop address. It is
 * not a mail server for anyone: RCPT TO is accepted only for a VERP address
 * whose token verifies and for `smtp.inbound.feedbackAddress`; everything else
 * gets 550 5.1.1 (no relay, no backscatter). There is no AUTH; STARTTLS is
 * offered with the submission certificate. An accepted report is parsed and
 * recorded before the 250 (report-handler.ts); one that cannot be used is
 * accepted and dropped with a warning naming the reason and the sender's
 * address, so the sender does not retry it.
 *
 * Anyone on the Internet can connect, so every sender is bounded
 * (inbound-guard.ts): new connections and reports per minute per address,
 * concurrent connections per address, and the size of a report, which is
 * refused at MAIL FROM when its SIZE= says so and while the data streams in
 * otherwise; nothing over the limit is buffered or parsed.
 */
import { Counter } from 'prom-client';
import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import type { AppDeps } from '../deps';
import { parseVerp } from '../delivery';
import { createClassifier } from '../delivery/classify';
import type { Listener } from '../modules';
import { readData } from './data-reader';
import { listen } from './listen';
import { smtpReply, SmtpReply } from './replies';
import { handleReport } from './report-handler';
import { InboundGuard } from './inbound-guard';
import type { TlsMaterial } from './tls';

const NAME = 'smtp-inbound';
/** A report concerns one message; a few recipients allow for batching relays. */
const MAX_RECIPIENTS = 100;

export async function startInbound(deps: AppDeps, tls: TlsMaterial): Promise<Listener> {
  const { config, log } = deps;
  const cfg = config.smtp.inbound;
  const feedback = cfg.feedbackAddress.trim().toLowerCase();
  const classify = createClassifier(config.delivery.bounceRulesFile);
  const guard = new InboundGuard(deps.clock, cfg);
  const busy = new Set<string>();
  const reports = new Counter({
    name: 'pigeon_smtp_inbound_reports_total', help: 'Reports received on the inbound listener by kind (dsn, arf, other)',
    labelNames: ['kind'], registers: [deps.metrics.registry],
  });

  const server: SMTPServer = new SMTPServer({
    name: config.hostname,
    banner: 'Pigeon bounce and feedback host',
    logger: false,
    key: tls.key,
    cert: tls.cert,
    authOptional: true,
    disabledCommands: ['AUTH'],
    size: cfg.maxMessageBytes,
    // smtp-server's own SIZE= check answers without an enhanced code; onMailFrom answers 552 5.3.4 instead
    hideSize: true,
    maxClients: cfg.maxClients,
    socketTimeout: cfg.socketTimeoutMs,
    closeTimeout: config.http.shutdownTimeoutMs,
    disableReverseLookup: true,

    onConnect(session, callback) {
      callback(guard.admitConnection(session.id, session.remoteAddress) ?? undefined);
    },

    onMailFrom(address, session, callback) {
      const refusal = guard.admitReport(session.remoteAddress, ((address.args || {}) as Record<string, string>).SIZE);
      if (refusal) log.warn({ listener: NAME, remoteAddress: session.remoteAddress, reply: refusal.message }, 'inbound: report refused');
      callback(refusal ?? undefined);
    },

    onRcptTo(address, session, callback) {
      const wanted = address.address.toLowerCase();
      const known = (feedback !== '' && wanted === feedback) || parseVerp(config, address.address) !== null;
      if (!known) {
        log.info({ listener: NAME, remoteAddress: session.remoteAddress, rcpt: address.address.slice(0, 320) }, 'inbound: recipient refused');
        return callback(smtpReply(550, '5.1.1', 'No such recipient here'));
      }
      if (session.envelope.rcptTo.length >= MAX_RECIPIENTS) return callback(smtpReply(452, '4.5.3', 'Too many recipients'));
      callback();
    },

    onData(stream, session, callback) {
      busy.add(session.id);
      receive(stream, session)
        .then(() => callback(null, '2.0.0 Ok'), (err: unknown) => {
          if (err instanceof SmtpReply) return callback(err);
          log.error({ listener: NAME, session: session.id, err }, 'inbound: could not record a report');
          callback(smtpReply(451, '4.3.0', 'Local error, try again later'));
        })
        .finally(() => busy.delete(session.id));
    },

    onClose(session) {
      guard.closed(session.id);
      busy.delete(session.id);
    },
  });

  /** Reads, parses and records one report; throws SmtpReply (too large) or a storage error. */
  async function receive(stream: Parameters<NonNullable<SMTPServerOptions['onData']>>[0], session: SMTPServerSession): Promise<void> {
    const data = await readData(stream, cfg.maxMessageBytes, false);
    if ('fault' in data) throw guard.tooLarge();
    const outcome = await handleReport(deps, classify, data.raw, session.envelope.rcptTo.map((r) => r.address));
    reports.inc({ kind: outcome.kind });
    const line = { listener: NAME, session: session.id, remoteAddress: session.remoteAddress, kind: outcome.kind, results: outcome.results };
    // a report that names no message of ours is either misdirected or forged: worth an operator's look
    if (outcome.results.some((r) => r.startsWith('dropped'))) log.warn(line, 'inbound: report processed');
    else log.info(line, 'inbound: report processed');
  }

  const listener = await listen(server, NAME, cfg.host, cfg.port, busy, log);
  log.info({ listener: NAME, host: cfg.host, port: listener.port }, 'smtp inbound listening');
  return listener;
}
