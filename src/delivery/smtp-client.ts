/**
 * One outbound SMTP connection, as promises that always settle. nodemailer's
 * SMTPConnection reports socket failures as 'error'/'end' events and then
 * drops the pending callback; this wrapper turns every way a command can end
 * (reply, timeout, reset, close) into one resolved value, so the transport
 * never waits forever and never throws on a remote failure.
 */
import net from 'node:net';
import type { TLSSocket } from 'node:tls';
import { Readable } from 'node:stream';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import { Transcript, transcriptLogger } from './transcript';
import { PipeliningConnection } from './pipelining';

export type SmtpError = SMTPConnection.SMTPError & { transcript?: string };

export interface ConnectOptions {
  /** MX host name: the TLS server name (SNI) */
  host: string;
  /** the address dialled */
  address: string;
  port: number;
  /** source address to bind */
  localAddress: string;
  /** EHLO name */
  ehlo: string;
  /**
   * 'opportunistic' upgrades with STARTTLS when offered; 'none' stays plain (fallback after a failed handshake);
   * 'verified' requires STARTTLS and a certificate valid for `host` (MTA-STS enforce), or fails
   */
  tls: 'opportunistic' | 'none' | 'verified';
  /** trusted CAs (system roots plus delivery.tlsCaFile); undefined: the system roots */
  ca?: string[];
  connectTimeoutMs: number;
  greetingTimeoutMs: number;
  commandTimeoutMs: number;
  dataTimeoutMs: number;
}

export type SendResult =
  | { ok: true; response: string; transcript: string }
  /** dataSent: the message body was handed to the socket, so the server may have it */
  | { ok: false; error: SmtpError; dataSent: boolean; transcript: string };

export class SmtpClient {
  /** messages sent (or tried) over this connection */
  messages = 0;
  closed = false;
  private pending?: (err: SmtpError) => void;
  private readonly closeListeners: Array<() => void> = [];
  /** The conversation up to the end of EHLO/STARTTLS, which begins every message's transcript on this connection. */
  private readonly setup: Transcript;
  /** Where the conversation is being written now (the setup, then each message's own). */
  private current: Transcript;

  private constructor(
    private readonly conn: PipeliningConnection,
    readonly options: ConnectOptions,
    setup: Transcript,
  ) {
    this.setup = this.current = setup;
    conn.on('error', (err) => {
      // A handshake that fails after STARTTLS surfaces as a socket error; name it for the plain-text fallback.
      if ((conn as unknown as { upgrading?: boolean }).upgrading) err.code = 'ETLS';
      this.finish(this.heldRefusal(err) ?? err);
    });
    conn.on('end', () => {
      const closed = Object.assign(new Error('connection closed'), { code: 'ECONNECTION' });
      this.finish(this.heldRefusal(closed) ?? closed);
    });
  }

  /**
   * A refused envelope whose DATA reply never came (pipelining.ts): the refusal is the message's outcome, and
   * the transcript notes how the connection ended before that reply.
   */
  private heldRefusal(ended: SmtpError): SmtpError | undefined {
    const refusal = this.conn.envelopeFailure;
    this.conn.envelopeFailure = undefined; // an 'error' is followed by an 'end': noted once
    if (refusal) this.current.note(`${ended.code ?? 'ERROR'}: ${ended.message}, before the reply to DATA`);
    return refusal;
  }

  /** Connects, reads the greeting, EHLO, STARTTLS when offered. */
  static open(options: ConnectOptions): Promise<{ client: SmtpClient } | { error: SmtpError }> {
    const setup = new Transcript([`*** connecting to ${options.host} [${options.address}]:${options.port} from ${options.localAddress}`]);
    let client: SmtpClient | undefined;
    const conn = new PipeliningConnection({
      host: options.address,
      port: options.port,
      localAddress: options.localAddress,
      name: options.ehlo,
      // Only opportunistic sessions go on in plain text after a refused STARTTLS; a verified one must fail (ETLS).
      opportunisticTLS: options.tls !== 'verified',
      ignoreTLS: options.tls === 'none',
      requireTLS: options.tls === 'verified',
      // Opportunistic TLS: an unverifiable certificate still beats plain text (RFC 7435); MTA-STS enforce refuses it.
      tls: {
        rejectUnauthorized: options.tls === 'verified',
        ...(options.ca ? { ca: options.ca } : {}),
        ...(net.isIP(options.host) ? {} : { servername: options.host }),
      },
      connectionTimeout: options.connectTimeoutMs,
      greetingTimeout: options.greetingTimeoutMs,
      socketTimeout: options.commandTimeoutMs,
      // The transaction log (commands and replies, never the message) feeds the attempt's transcript.
      logger: transcriptLogger(() => client?.current ?? setup) as unknown as SMTPConnection.Options['logger'],
      transactionLog: true,
    });
    const opened = (client = new SmtpClient(conn, options, setup));
    return new Promise((resolve) => {
      opened.pending = (error) => {
        setup.note(`${error.code ?? 'ERROR'}: ${error.message}`);
        resolve({ error: Object.assign(error, { transcript: setup.toString() }) });
      };
      conn.connect(() => {
        opened.pending = undefined;
        // Commands and the end of data are small writes: without this, Nagle plus the
        // server's delayed ACK holds the final "." for ~40 ms on every message.
        conn._socket?.setNoDelay(true);
        resolve({ client });
      });
    });
  }

  get secure(): boolean {
    return Boolean(this.conn.secure);
  }

  /** The TLS version and whether the certificate verified for the MX name (checked even when not required). */
  get tlsSession(): { version: string | null; verified: boolean; authorizationError: string | null } {
    const socket = this.conn._socket as Partial<TLSSocket> | undefined;
    if (!this.conn.secure || !socket?.getProtocol) return { version: null, verified: false, authorizationError: null };
    const error = socket.authorizationError as unknown as Error | string | undefined;
    return { version: socket.getProtocol() ?? null, verified: Boolean(socket.authorized), authorizationError: error ? String((error as NodeJS.ErrnoException).code ?? error) : null };
  }

  /** One transaction: MAIL FROM, RCPT TO and DATA (in one write when the server offers PIPELINING: pipelining.ts), the body. */
  send(envelope: { from: string; to: string; size: number; use8BitMime: boolean }, raw: Buffer): Promise<SendResult> {
    this.messages++;
    let dataSent = false;
    const transcript = (this.current = new Transcript(this.setup.entries));
    if (this.messages > 1) transcript.note(`connection reused: message ${this.messages} on it`);
    return new Promise((resolve) => {
      this.pending = (error) => {
        if (!error.response) transcript.note(`${error.code ?? 'ERROR'}: ${error.message}`);
        resolve({ ok: false, error, dataSent, transcript: transcript.toString() });
      };
      const body = this.bodyStream(raw);
      body.on('end', () => {
        // The body is out: the wait for the final reply may take longer than a command.
        dataSent = true;
        this.setTimeout(this.options.dataTimeoutMs);
      });
      this.conn.send(envelope, body, (err, info) => {
        this.pending = undefined;
        this.setTimeout(this.options.commandTimeoutMs);
        if (err && !err.response) transcript.note(`${err.code ?? 'ERROR'}: ${err.message}`);
        resolve(err ? { ok: false, error: err, dataSent, transcript: transcript.toString() } : { ok: true, response: info.response, transcript: transcript.toString() });
      });
    });
  }

  /**
   * The message as the stream nodemailer pipes (dot-stuffed) to the socket once the server said 354. It is
   * first read then; the socket is corked from that read to the end of the turn, so the body and the final
   * "." leave in one write instead of two (the stream chain between them runs on process.nextTick, which
   * ends before setImmediate). Nothing sent changes, only how many syscalls carry it.
   */
  private bodyStream(raw: Buffer): Readable {
    const conn = this.conn;
    return new Readable({
      read() {
        const socket = conn._socket;
        socket?.cork();
        setImmediate(() => socket?.uncork());
        this.push(raw);
        this.push(null);
      },
    });
  }

  /** RSET after a failed transaction; false when the connection is no longer usable. */
  reset(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.pending = () => resolve(false);
      this.conn.reset((err) => {
        this.pending = undefined;
        resolve(!err);
      });
    });
  }

  /** QUIT politely (idle connections), or drop at once. */
  close(polite = true): void {
    if (this.closed) return;
    if (polite) this.conn.quit();
    else this.conn.close();
    this.finish(undefined);
  }

  onClose(listener: () => void): void {
    if (this.closed) listener();
    else this.closeListeners.push(listener);
  }

  private setTimeout(ms: number): void {
    this.conn._socket?.setTimeout(ms);
  }

  /** The connection is over: settle what was waiting and tell the pool. */
  private finish(err: SmtpError | undefined): void {
    const pending = this.pending;
    this.pending = undefined;
    pending?.(err ?? Object.assign(new Error('connection closed'), { code: 'ECONNECTION' }));
    if (this.closed) return;
    this.closed = true;
    for (const listener of this.closeListeners.splice(0)) listener();
  }
}
