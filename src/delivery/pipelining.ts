/**
 * nodemailer's SMTPConnection with the envelope pipelined (RFC 2920): when the
 * server offers PIPELINING, MAIL FROM, every RCPT TO and DATA leave in one
 * write and their replies are read together. nodemailer waits for each reply
 * before the next command, so a message cost four round trips and four
 * writes and four reads on the main thread; pipelined it costs two of each
 * (the envelope, then the body). Measured end to end, the SMTP client's writes
 * and reads were the largest share of the main thread's time after MIME.
 *
 * Only the envelope changes: the body still goes through nodemailer's own
 * DATA stream once the server said 354, and every error has the shape,
 * code, command and reply nodemailer gives (delivery/classify.ts reads them).
 * Envelopes nodemailer treats specially go its own way: no PIPELINING, LMTP,
 * DSN, or an address that needs SMTPUTF8 or would fail its checks.
 *
 * Replies are taken in order; each command's reply is read even after an
 * earlier one failed, and the envelope is answered at DATA's reply, so the
 * connection is in step for the caller's RSET. A server that answers 354 to
 * a DATA none of whose recipients it took gets the data's end at once (RFC
 * 2920 §3.1), and the message is reported failed.
 *
 * This subclasses internals of nodemailer 7 (`_setEnvelope`, `_responseActions`,
 * `_formatError`): test/delivery/pipelining.test.ts checks the conversation.
 */
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { Socket } from 'node:net';

type SmtpError = SMTPConnection.SMTPError & { recipient?: string; rejected?: string[]; rejectedErrors?: SmtpError[] };
type Reply = (str: string) => void;
type EnvelopeDone = (err: SmtpError | null, info?: { accepted: string[]; rejected: string[]; ehlo?: string[]; rejectedErrors?: SmtpError[] }) => void;

interface Envelope {
  from: string;
  to: string[];
  size?: number;
  use8BitMime?: boolean;
  dsn?: unknown;
}

/** What this module uses of SMTPConnection's insides. */
interface Internals {
  options: { lmtp?: boolean; debug?: boolean; transactionLog?: boolean };
  logger: { debug(meta: object, message: string): void };
  _socket: Socket;
  _destroyed: boolean;
  _supportedExtensions: string[];
  _responseActions: Reply[];
  _responseQueue: string[];
  _processResponse(): void;
  _ehloLines?: string[];
  _using8BitMime: boolean;
  _envelope: Envelope & { rcptQueue: string[]; accepted: string[]; rejected: string[]; rejectedErrors: SmtpError[] };
  _formatError(message: string, code: string, response: string | false, command: string): SmtpError;
  close(): void;
}

type SetEnvelope = (this: SMTPConnection, envelope: Envelope, done: EnvelopeDone) => void;
const nodemailerSetEnvelope = (SMTPConnection.prototype as unknown as { _setEnvelope: SetEnvelope })._setEnvelope;

/** Printable ASCII without the characters nodemailer refuses in an address: nothing it would treat specially. */
const PLAIN_ADDRESS = /^[\x21-\x3b\x3d\x3f-\x7e]+$/;

const isOk = (reply: string) => reply.charAt(0) === '2';

export class PipeliningConnection extends SMTPConnection {
  /** The refusal of the envelope in flight, while DATA's reply is awaited (onEnvelopeReply). */
  envelopeFailure?: SmtpError;
  /** A pipelined envelope's replies are still due. */
  private envelopeInFlight = false;

  /** Overrides nodemailer's: the whole envelope in one write when the server allows it. */
  _setEnvelope(envelope: Envelope, done: EnvelopeDone): void {
    const self = this as unknown as Internals;
    this.envelopeFailure = undefined;
    const to = ([] as string[]).concat(envelope.to ?? []).map((a) => String(a ?? '').trim());
    const from = String(envelope.from ?? '').trim();
    const plain = to.length > 0 && to.every((a) => PLAIN_ADDRESS.test(a)) && (from === '' || PLAIN_ADDRESS.test(from));
    if (!self._supportedExtensions.includes('PIPELINING') || self.options.lmtp || envelope.dsn || !plain) {
      return nodemailerSetEnvelope.call(this, envelope, done);
    }
    self._envelope = { ...envelope, from, to, rcptQueue: [], accepted: [], rejected: [], rejectedErrors: [] };
    const commands = [mailCommand(self, from, envelope), ...to.map((a) => `RCPT TO:<${a}>`), 'DATA'];
    const replies: string[] = [];
    this.envelopeInFlight = true;
    for (const command of commands) {
      self._responseActions.push((reply) => {
        replies.push(reply);
        this.onEnvelopeReply(replies, to, done);
      });
    }
    this.writeCommands(commands);
  }

  /**
   * One more reply of the pipelined envelope. A refused MAIL FROM, or every recipient refused, is held until
   * DATA's reply: answering at once would let the caller's RSET go out before it, and a server that answers 354
   * anyway would take the RSET as the message. A server that closes or times out first gets the held refusal
   * reported (`envelopeFailure`, read by smtp-client.ts).
   */
  private onEnvelopeReply(replies: string[], to: string[], answer: EnvelopeDone): void {
    const self = this as unknown as Internals;
    const envelope = self._envelope;
    const reply = replies[replies.length - 1];
    const at = replies.length - 1;
    if (at === 0) {
      if (!isOk(reply)) this.envelopeFailure = self._formatError('Mail command failed', 'EENVELOPE', reply, 'MAIL FROM');
      return;
    }
    if (at <= to.length) {
      if (this.envelopeFailure) return;
      this.onRecipientReply(to[at - 1], reply);
      if (at === to.length && envelope.rejected.length === to.length) this.envelopeFailure = this.allRejected(reply);
      return;
    }
    const failure = this.envelopeFailure;
    this.envelopeFailure = undefined;
    this.envelopeInFlight = false;
    if (failure) {
      // nodemailer takes 2xx as well as 3xx to DATA as "go ahead" (some servers answer 250): end that data too
      if (/^[23]/.test(reply)) this.endEmptyData();
      return answer(failure);
    }
    if (!/^[23]/.test(reply)) return answer(self._formatError('Data command failed', 'EENVELOPE', reply, 'DATA'));
    answer(null, {
      accepted: envelope.accepted,
      rejected: envelope.rejected,
      ...(self._ehloLines?.length ? { ehlo: self._ehloLines } : {}),
      ...(envelope.rejectedErrors.length ? { rejectedErrors: envelope.rejectedErrors } : {}),
    });
  }

  /**
   * nodemailer hands queued replies to their handlers one per setImmediate, and a socket error reaches it on
   * nextTick, sooner: replies read just before a reset would be dropped unread. An envelope's are taken first,
   * so a refusal that arrived is the one reported (`envelopeFailure`).
   */
  _onError(...args: unknown[]): void {
    this.takeEnvelopeReplies();
    (SMTPConnection.prototype as unknown as { _onError: (...a: unknown[]) => void })._onError.apply(this, args);
  }

  _onClose(): void {
    this.takeEnvelopeReplies();
    (SMTPConnection.prototype as unknown as { _onClose: () => void })._onClose.call(this);
  }

  private takeEnvelopeReplies(): void {
    const self = this as unknown as Internals;
    while (this.envelopeInFlight && self._responseQueue.length && !self._destroyed) self._processResponse();
  }

  private onRecipientReply(recipient: string, reply: string): void {
    const self = this as unknown as Internals;
    if (isOk(reply)) {
      self._envelope.accepted.push(recipient);
      return;
    }
    const err = self._formatError('Recipient command failed', 'EENVELOPE', reply, 'RCPT TO');
    err.recipient = recipient;
    self._envelope.rejected.push(recipient);
    self._envelope.rejectedErrors.push(err);
  }

  private allRejected(reply: string): SmtpError {
    const self = this as unknown as Internals;
    const err = self._formatError("Can't send mail - all recipients were rejected", 'EENVELOPE', reply, 'RCPT TO');
    err.rejected = self._envelope.rejected;
    err.rejectedErrors = self._envelope.rejectedErrors;
    return err;
  }

  /** A 354 to a DATA that has nothing to carry: end the data at once and let its reply pass. */
  private endEmptyData(): void {
    const self = this as unknown as Internals;
    self._responseActions.push(() => undefined);
    this.writeCommands(['.']);
  }

  /** Commands in one write, each logged as nodemailer's _sendCommand logs it (the attempt's transcript). */
  private writeCommands(commands: string[]): void {
    const self = this as unknown as Internals;
    if (self._destroyed) return;
    if (self._socket.destroyed) return self.close();
    if (self.options.debug || self.options.transactionLog) for (const c of commands) self.logger.debug({ tnx: 'client' }, c);
    self._socket.write(Buffer.from(`${commands.join('\r\n')}\r\n`, 'utf-8'));
  }
}

/** MAIL FROM with the parameters nodemailer would add for this envelope (no SMTPUTF8 or DSN: those go its way). */
function mailCommand(self: Internals, from: string, envelope: Envelope): string {
  const args: string[] = [];
  if (envelope.use8BitMime && self._supportedExtensions.includes('8BITMIME')) {
    args.push('BODY=8BITMIME');
    self._using8BitMime = true;
  }
  if (envelope.size && self._supportedExtensions.includes('SIZE')) args.push(`SIZE=${envelope.size}`);
  return `MAIL FROM:<${from}>${args.length ? ` ${args.join(' ')}` : ''}`;
}
