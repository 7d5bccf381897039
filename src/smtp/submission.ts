/**
 * The submission listener (port 587 with STARTTLS or 465 with implicit TLS on
 * a VPS; 127.0.0.1:2587 by default): applications relay through it with an
 * API key. It is the SMTP front of the accept path, and never an open relay:
 * without AUTH, MAIL FROM gets 530 unless the client is in a key's relay
 * network (relay-user.ts). The same handlers serve the optional port-25 relay
 * listener (`smtp.relay`), which offers no AUTH: relay by network only.
 * The session, step by step:
 *   connect   → total and per-address connection caps
 *   AUTH      → auth.ts (API key, allowlist, scope; failures rate limited)
 *   MAIL FROM → the sender (AUTH or relay network); the key still valid and
 *               within its rate; SIZE checked by smtp-server
 *   RCPT TO   → the API's address validator, the recipient limit (452)
 *   DATA      → data-reader.ts (bare CR/LF, line length, size), then submit.ts
 */
import { Counter } from 'prom-client';
import {
  SMTPServer, type SMTPServerAddress, type SMTPServerAuthentication, type SMTPServerAuthenticationResponse, type SMTPServerOptions, type SMTPServerSession,
} from 'smtp-server';
import type { AppDeps } from '../deps';
import { ApiError } from '../http/errors';
import { parseEmail } from '../messages/addresses';
import type { Listener } from '../modules';
import { checkSender, login, type SubmitUser } from './auth';
import { ClientConnections } from './client-limit';
import { readData, type DataFault } from './data-reader';
import { relayUser } from './relay-user';
import { listen } from './listen';
import { createPigeonHeaderReader } from './pigeon-headers';
import { smtpReply, SmtpReply } from './replies';
import { isSmtpReply, submit, type PigeonHeaderReader } from './submit';
import type { TlsMaterial } from './tls';

/** What differs between the submission listener and the port-25 relay listener. */
interface ListenerKind {
  name: string;
  /** AUTH offered (submission) or not (relay by network only) */
  auth: boolean;
  /** prefix of this listener's metric names */
  metrics: string;
  limits: { maxConnectionsPerClient: number };
}

/** MAIL FROMs refused without AUTH before the session is closed (smtp-server's own unauthenticated cap is 10 commands). */
const MAX_REFUSED_SENDERS = 3;

const SUBMISSION: Omit<ListenerKind, 'limits'> = { name: 'smtp-submission', auth: true, metrics: 'pigeon_smtp_submission' };
const RELAY: Omit<ListenerKind, 'limits'> = { name: 'smtp-relay', auth: false, metrics: 'pigeon_smtp_relay' };

function faultReply(fault: DataFault, maxBytes: number): SmtpReply {
  switch (fault) {
    case 'too_large':
      return smtpReply(552, '5.3.4', `Message exceeds the maximum size of ${maxBytes} bytes`);
    case 'bare_lf':
      return smtpReply(554, '5.6.0', 'Message contains a bare LF (a line feed without carriage return); every line must end in CRLF');
    case 'bare_cr':
      return smtpReply(554, '5.6.0', 'Message contains a bare CR (a carriage return without line feed); every line must end in CRLF');
    case 'line_too_long':
      return smtpReply(554, '5.6.0', 'Message has a line longer than 998 characters (RFC 5322); use quoted-printable or base64 for long lines');
  }
}

const validationReply = (code: number, enhanced: string, what: string, address: string): SmtpReply | null => {
  try {
    parseEmail(address, what);
    return null;
  } catch (err) {
    if (err instanceof ApiError) return smtpReply(code, enhanced, `${what} <${address}> rejected: ${err.message}`);
    throw err;
  }
};

type DataStream = Parameters<NonNullable<SMTPServerOptions['onData']>>[0];
type Done = (err?: Error | null) => void;

/** The handlers of one submission listener and the state they share. */
class Submission {
  readonly clients: ClientConnections;
  readonly busy = new Set<string>();
  /** session id → the key its relay network names (sessions without AUTH); bounded by maxClients */
  private readonly relayUsers = new Map<string, SubmitUser>();
  /** session id → MAIL FROMs refused for want of AUTH or a relay network (authOptional lifts smtp-server's own cap) */
  private readonly refusedSenders = new Map<string, number>();
  server!: SMTPServer;
  private readonly readPigeon: PigeonHeaderReader;
  private readonly transactions: Counter<'outcome'>;
  private readonly authFailures: Counter;

  constructor(private readonly deps: AppDeps, private readonly kind: ListenerKind) {
    this.clients = new ClientConnections(kind.limits.maxConnectionsPerClient);
    this.readPigeon = createPigeonHeaderReader(deps.config);
    const registers = [deps.metrics.registry];
    this.transactions = new Counter({
      name: `${kind.metrics}_transactions_total`, help: `SMTP transactions of the ${kind.name} listener by outcome (accepted, refused, error)`,
      labelNames: ['outcome'], registers,
    });
    this.authFailures = kind.auth
      ? new Counter({ name: 'pigeon_smtp_auth_failures_total', help: 'Refused SMTP AUTH attempts', registers })
      : new Counter({ name: `${kind.metrics}_auth_failures_total`, help: 'Unused: this listener offers no AUTH', registers: [] });
  }

  onConnect(session: SMTPServerSession, callback: Done): void {
    if (this.clients.admit(session.id, session.remoteAddress)) return callback();
    callback(smtpReply(421, '4.7.0', `Too many connections from ${session.remoteAddress}; try again later`));
  }

  onAuth(auth: SMTPServerAuthentication, session: SMTPServerSession, callback: (err: Error | null, res?: SMTPServerAuthenticationResponse) => void): void {
    login(this.deps, auth.password ?? '', session.remoteAddress).then(
      (result) => {
        if ('user' in result) return callback(null, { user: result.user });
        this.authFailures.inc();
        this.deps.log.warn({ listener: this.kind.name, remoteAddress: session.remoteAddress, reply: result.refused.message }, 'smtp auth refused');
        callback(result.refused);
        // the 454 is written first; then the session ends
        if (result.disconnect) setImmediate(() => this.closeSession(session.id));
      },
      (err: unknown) => {
        this.deps.log.error({ err, listener: this.kind.name }, 'smtp auth failed with an error');
        callback(smtpReply(454, '4.7.0', 'Temporary authentication failure; try again later'));
      },
    );
  }

  onMailFrom(address: SMTPServerAddress, session: SMTPServerSession, callback: Done): void {
    this.sender(session).then(
      (refused) => callback(refused ?? (address.address ? validationReply(553, '5.1.7', 'Sender', address.address) : null)),
      (err: unknown) => {
        this.deps.log.error({ err, listener: this.kind.name }, 'smtp MAIL FROM check failed');
        callback(smtpReply(451, '4.3.0', 'Local error, try again later'));
      },
    );
  }

  onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: Done): void {
    const max = this.deps.config.limits.maxRecipients;
    const rcpts = session.envelope.rcptTo;
    const repeated = rcpts.some((r) => r.address.toLowerCase() === address.address.toLowerCase());
    if (!repeated && rcpts.length >= max) {
      return callback(smtpReply(452, '4.5.3', `Too many recipients: at most ${max} per message; send the rest in another transaction`));
    }
    callback(validationReply(553, '5.1.3', 'Recipient', address.address));
  }

  onData(stream: DataStream, session: SMTPServerSession, callback: (err?: Error | null, reply?: string) => void): void {
    this.busy.add(session.id);
    const done = (err: SmtpReply | null, reply?: string) => {
      this.busy.delete(session.id);
      this.transactions.inc({ outcome: err ? (err.responseCode >= 500 ? 'refused' : 'error') : 'accepted' });
      callback(err, reply);
    };
    this.store(stream, session).then(
      (reply) => done(null, reply),
      (err: unknown) => {
        if (isSmtpReply(err)) return done(err);
        this.deps.log.error({ err, listener: this.kind.name, session: session.id }, 'smtp submission failed');
        done(smtpReply(451, '4.3.0', 'Local error, try again later'));
      },
    );
  }

  onClose(session: SMTPServerSession): void {
    this.clients.release(session.id);
    this.relayUsers.delete(session.id);
    this.refusedSenders.delete(session.id);
    this.busy.delete(session.id);
  }

  /** The sender of this transaction (AUTH, else the client's relay network) checked as at every MAIL FROM; a reply refuses. */
  private async sender(session: SMTPServerSession): Promise<SmtpReply | null> {
    let user = session.user as SubmitUser | undefined;
    if (!user) {
      const relayed = await relayUser(this.deps, session.remoteAddress, this.kind.auth);
      if (relayed instanceof SmtpReply) {
        this.deps.log.info({ listener: this.kind.name, remoteAddress: session.remoteAddress }, 'smtp relay refused: not authenticated, not in a relay network');
        const refused = (this.refusedSenders.get(session.id) ?? 0) + 1;
        this.refusedSenders.set(session.id, refused);
        // the 530 is written first; a client that keeps trying without AUTH is then let go
        if (refused >= MAX_REFUSED_SENDERS) setImmediate(() => this.closeSession(session.id));
        return relayed;
      }
      this.relayUsers.set(session.id, (user = relayed));
    }
    return checkSender(this.deps, user, session.remoteAddress);
  }

  private userOf(session: SMTPServerSession): SubmitUser {
    const user = (session.user as SubmitUser | false | undefined) || this.relayUsers.get(session.id); // smtp-server sets user false before AUTH
    if (!user) throw smtpReply(503, '5.5.1', 'MAIL FROM first');
    return user;
  }

  /** Reads the data and stores the message; resolves with the 250 text. */
  private async store(stream: DataStream, session: SMTPServerSession): Promise<string> {
    const { log, config } = this.deps;
    const data = await readData(stream, config.limits.maxMessageBytes, true);
    if ('fault' in data) {
      log.info({ listener: this.kind.name, session: session.id, remoteAddress: session.remoteAddress, fault: data.fault }, 'smtp message refused');
      throw faultReply(data.fault, config.limits.maxMessageBytes);
    }
    const user = this.userOf(session);
    const recipients = session.envelope.rcptTo.map((r) => r.address);
    const reply = await submit(this.deps, this.readPigeon, { user, recipients, raw: data.raw });
    log.info({
      listener: this.kind.name, session: session.id, accountId: user.accountId, mode: user.mode, recipients: recipients.length, relayNetwork: user.relayNetwork,
    }, 'smtp message accepted');
    return reply;
  }

  private closeSession(sessionId: string): void {
    for (const connection of this.server.connections) if (connection.id === sessionId) connection.close();
  }
}

export async function startSubmission(deps: AppDeps, tls: TlsMaterial): Promise<Listener> {
  const cfg = deps.config.smtp.submission;
  return start(deps, tls, { ...SUBMISSION, limits: cfg }, cfg, { secure: cfg.secure, allowInsecureAuth: cfg.allowInsecureAuth });
}

/** The plain relay listener (`smtp.relay.enabled`): STARTTLS offered, no AUTH, relay networks only. */
export async function startRelayListener(deps: AppDeps, tls: TlsMaterial): Promise<Listener> {
  const cfg = deps.config.smtp.relay;
  return start(deps, tls, { ...RELAY, limits: cfg }, cfg, { secure: false, disabledCommands: ['AUTH'] });
}

interface Endpoint {
  host: string;
  port: number;
  maxClients: number;
  socketTimeoutMs: number;
}

async function start(deps: AppDeps, tls: TlsMaterial, kind: ListenerKind, cfg: Endpoint, options: SMTPServerOptions): Promise<Listener> {
  const { config, log } = deps;
  const s = new Submission(deps, kind);
  s.server = new SMTPServer({
    name: config.hostname,
    banner: kind.auth ? 'Pigeon submission' : 'Pigeon relay',
    logger: false,
    ...options,
    key: tls.key,
    cert: tls.cert,
    authMethods: ['PLAIN', 'LOGIN'],
    // relay networks let a client send without AUTH; sender() refuses everyone else with 530 at MAIL FROM
    authOptional: true,
    authRequiredMessage: '5.7.0 Authentication required',
    size: config.limits.maxMessageBytes,
    maxClients: cfg.maxClients,
    socketTimeout: cfg.socketTimeoutMs,
    closeTimeout: config.http.shutdownTimeoutMs,
    disableReverseLookup: true,
    onConnect: (session, cb) => s.onConnect(session, cb),
    onAuth: (auth, session, cb) => s.onAuth(auth, session, cb),
    onMailFrom: (address, session, cb) => s.onMailFrom(address, session, cb),
    onRcptTo: (address, session, cb) => s.onRcptTo(address, session, cb),
    onData: (stream, session, cb) => s.onData(stream, session, cb),
    onClose: (session) => s.onClose(session),
  });
  const listener = await listen(s.server, kind.name, cfg.host, cfg.port, s.busy, log);
  log.info({ listener: kind.name, host: cfg.host, port: listener.port, secure: options.secure, certificate: tls.source }, `${kind.name} listening`);
  return listener;
}
