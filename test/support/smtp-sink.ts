/*
 * An SMTP server standing in for a recipient's MX host. It records every message
 * with the envelope, the source address the client connected from and its EHLO
 * name, so delivery tests can assert on what arrived and from which pool IP. Its
 * answers are scriptable per stage (421 at connect, 451 for the first attempts of
 * one recipient, 550 5.1.1 for another...), and it can misbehave in DATA: stall
 * without answering, or drop the connection before or after its 250.
 *
 * Listen on 127.0.0.2, 127.0.0.3... to run several "MX hosts" on one port number.
 */
import type net from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerError, type SMTPServerSession } from 'smtp-server';
import { testCertificate } from './tls-cert';
import { arrivals } from './wait';

export type SinkStage = 'connect' | 'mail' | 'rcpt' | 'data';

/** An SMTP reply. At the data stage a code below 400 accepts, with message as the 250 text. */
export interface SinkReply {
  code: number;
  message: string;
}

export interface SinkContext {
  stage: SinkStage;
  /** MAIL FROM address ('' for the null sender); from the mail stage on */
  from?: string;
  /** the recipient being answered; rcpt stage only */
  rcpt?: string;
  /** recipients accepted so far; complete at the data stage */
  rcptTo: string[];
  /** the message as received; data stage only */
  raw?: Buffer;
  remoteAddress: string;
  /** EHLO/HELO name, '' at the connect stage */
  clientHostname: string;
  secure: boolean;
  /**
   * 1 the first time this sink sees this subject at this stage, 2 the second time...
   * across connections. The subject is the remote address at connect, the sender at
   * mail, the recipient at rcpt, and the sender with the recipient list at data.
   */
  attempt: number;
}

export type DropMode = 'before-reply' | 'after-reply';

export interface SinkOptions {
  /** default 127.0.0.1; any 127.x.y.z works on Linux */
  host?: string;
  /** default 0 (an ephemeral port) */
  port?: number;
  /** 'starttls' offers STARTTLS with a fresh self-signed certificate; default 'none' */
  tls?: 'none' | 'starttls';
  /** with tls 'starttls': serve this key and certificate instead of the self-signed one (e.g. one a test CA issued) */
  certificate?: { key: string; cert: string };
  /** name in the greeting and EHLO reply; default mx.sink.test */
  name?: string;
  /** undefined accepts */
  reply?: (ctx: SinkContext) => SinkReply | undefined;
  /** advertise SIZE and refuse larger messages with 552 */
  size?: number;
  /** read the whole message, then never answer (to test the client's data timeout) */
  stallInData?: boolean | ((ctx: SinkContext) => boolean);
  /** read the whole message, then drop the connection before or after answering it */
  dropAfterData?: DropMode | ((ctx: SinkContext) => DropMode | undefined);
}

export interface ReceivedMessage {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
  remoteAddress: string;
  /** the address the client connected to (which "MX host") */
  localAddress: string;
  /** EHLO/HELO name, lower-cased by smtp-server */
  clientHostname: string;
  /** true when the session had switched to TLS with STARTTLS */
  secure: boolean;
  connectionId: string;
  receivedAt: number;
}

/** A message whose DATA was read but not accepted: refused, stalled, or dropped before the reply. */
export interface UnacceptedMessage extends ReceivedMessage {
  outcome: 'rejected' | 'stalled' | 'dropped';
  reply?: SinkReply;
}

export interface SinkSession {
  id: string;
  remoteAddress: string;
  localAddress: string;
  /** EHLO name once the client has sent one */
  clientHostname: string;
  secure: boolean;
}

export interface SmtpSink {
  host: string;
  port: number;
  /** messages answered with 2xx, in arrival order */
  messages: ReceivedMessage[];
  unaccepted: UnacceptedMessage[];
  /** connections accepted so far */
  readonly connections: number;
  sessions: SinkSession[];
  /** resolves with messages once at least count have been accepted; default timeout 2000 ms */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedMessage[]>;
  /** stops listening and destroys open connections */
  close(): Promise<void>;
}

export async function startSmtpSink(opts: SinkOptions = {}): Promise<SmtpSink> {
  const host = opts.host ?? '127.0.0.1';
  const messages: ReceivedMessage[] = [];
  const unaccepted: UnacceptedMessage[] = [];
  const sessions = new Map<string, SinkSession>();
  const sockets = new Set<net.Socket>();
  const context = contextMaker();
  let connections = 0;
  let port = 0;
  const arrived = arrivals(messages, (count, ms) => {
    const others = unaccepted.map((m) => m.outcome).join(', ') || 'none';
    return `SMTP sink ${host}:${port}: expected ${count} message(s) within ${ms} ms, got ${messages.length} (unaccepted: ${others})`;
  });

  // the scripted answer as smtp-server wants it: an Error carrying responseCode, or nothing
  const refusal = (ctx: SinkContext): SMTPServerError | undefined => {
    const reply = opts.reply?.(ctx);
    return reply && reply.code >= 400 ? smtpError(reply) : undefined;
  };
  const noteHello = (session: SMTPServerSession): void => {
    const record = sessions.get(session.id);
    if (record) Object.assign(record, { clientHostname: session.hostNameAppearsAs || '', secure: session.secure });
  };

  const tls = opts.tls ?? 'none';
  const server: SMTPServer = new SMTPServer({
    name: opts.name ?? 'mx.sink.test',
    logger: false,
    authOptional: true,
    disabledCommands: tls === 'starttls' ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    hideSTARTTLS: tls !== 'starttls',
    ...(tls === 'starttls' ? (opts.certificate ?? testCertificate()) : {}),
    disableReverseLookup: true, // no PTR lookups leaving the machine
    size: opts.size,

    onConnect(session, callback) {
      sessions.set(session.id, { id: session.id, remoteAddress: session.remoteAddress, localAddress: session.localAddress, clientHostname: '', secure: false });
      callback(refusal(context('connect', session, {}, session.remoteAddress)));
    },
    onMailFrom(address, session, callback) {
      noteHello(session);
      callback(refusal(context('mail', session, { from: address.address }, address.address.toLowerCase())));
    },
    onRcptTo(address, session, callback) {
      callback(refusal(context('rcpt', session, { rcpt: address.address }, address.address.toLowerCase())));
    },
    onData(stream, session, callback) {
      readAll(stream).then((raw) => {
        const socket = [...server.connections].find((c) => c.id === session.id)?._socket;
        const outcome = answerData(opts, context, stream, session, raw, socket);
        if (outcome.accepted) {
          messages.push(outcome.message);
          arrived.notify();
        } else {
          unaccepted.push(outcome.message);
        }
        outcome.answer?.(callback);
      }, callback);
    },
    onClose(session) {
      noteHello(session);
    },
  });
  server.server.on('connection', (socket: net.Socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('error', () => {}); // client misbehaviour is what tests provoke; do not crash on it

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  port = (server.server.address() as net.AddressInfo).port;

  return {
    host,
    port,
    messages,
    unaccepted,
    get connections() {
      return connections;
    },
    get sessions() {
      return [...sessions.values()];
    },
    waitFor: arrived.waitFor,
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}

type MakeContext = (stage: SinkStage, session: SMTPServerSession, extra: Partial<SinkContext>, subject: string) => SinkContext;

/** Builds the context handed to the reply script, counting attempts per stage and subject. */
function contextMaker(): MakeContext {
  const attempts = new Map<string, number>();
  return (stage, session, extra, subject) => {
    const key = `${stage}\n${subject}`;
    const attempt = (attempts.get(key) ?? 0) + 1;
    attempts.set(key, attempt);
    return {
      stage,
      from: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined,
      rcptTo: session.envelope.rcptTo.map((a) => a.address),
      remoteAddress: session.remoteAddress,
      clientHostname: session.hostNameAppearsAs || '',
      secure: session.secure,
      attempt,
      ...extra,
    };
  };
}

type DataCallback = (err?: Error | null, message?: string) => void;
type DataOutcome =
  | { accepted: true; message: ReceivedMessage; answer: (callback: DataCallback) => void }
  | { accepted: false; message: UnacceptedMessage; answer?: (callback: DataCallback) => void };

/** Decides what happens to a message once its DATA is read: refuse, stall, drop or accept. */
function answerData(opts: SinkOptions, context: MakeContext, stream: SMTPServerDataStream, session: SMTPServerSession, raw: Buffer, socket?: net.Socket): DataOutcome {
  const envelope = session.envelope;
  const subject = [envelope.mailFrom ? envelope.mailFrom.address : '', ...envelope.rcptTo.map((a) => a.address)].join('\n').toLowerCase();
  const ctx = context('data', session, { raw }, subject);
  const message: ReceivedMessage = {
    mailFrom: ctx.from ?? '',
    rcptTo: ctx.rcptTo,
    raw,
    remoteAddress: session.remoteAddress,
    localAddress: session.localAddress,
    clientHostname: ctx.clientHostname,
    secure: session.secure,
    connectionId: session.id,
    receivedAt: Date.now(),
  };

  if (stream.sizeExceeded) {
    const reply = { code: 552, message: 'message exceeds fixed maximum message size' };
    return { accepted: false, message: { ...message, outcome: 'rejected', reply }, answer: (cb) => cb(smtpError(reply)) };
  }
  if (typeof opts.stallInData === 'function' ? opts.stallInData(ctx) : opts.stallInData) {
    return { accepted: false, message: { ...message, outcome: 'stalled' } }; // no answer ever comes
  }
  const drop = typeof opts.dropAfterData === 'function' ? opts.dropAfterData(ctx) : opts.dropAfterData;
  if (drop === 'before-reply') {
    socket?.destroy();
    return { accepted: false, message: { ...message, outcome: 'dropped' } };
  }
  const reply = opts.reply?.(ctx);
  if (reply && reply.code >= 400) {
    return { accepted: false, message: { ...message, outcome: 'rejected', reply }, answer: (cb) => cb(smtpError(reply)) };
  }
  const answer = (cb: DataCallback): void => {
    cb(null, reply?.message);
    // end() flushes the 250 before the FIN; destroy() alone would race it
    if (drop === 'after-reply') socket?.end(() => socket.destroy());
  };
  return { accepted: true, message, answer };
}

function smtpError(reply: SinkReply): SMTPServerError {
  return Object.assign(new Error(reply.message), { responseCode: reply.code });
}

async function readAll(stream: SMTPServerDataStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
