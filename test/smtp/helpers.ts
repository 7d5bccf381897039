/**
 * Shared by the SMTP tests: an app with its two listeners, nodemailer clients
 * for the submission port (the real client applications use), and a raw
 * line-by-line SMTP client for what nodemailer would never send (bare LF,
 * SIZE above the limit, pipelined garbage).
 */
import net from 'node:net';
import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import type { Clock } from '../../src/clock';
import type { ConfigInput } from '../../src/config';
import { newId } from '../../src/ids';
import { createKey, startTestApp, type TestApp } from '../support/app';

export interface SmtpApp extends TestApp {
  submissionPort: number;
  inboundPort: number;
  accountId: string;
}

/** `holdQueue` stops the MTA, so accepted messages stay as the accept path wrote them. */
export async function startSmtpApp(overrides: ConfigInput = {}, clock?: Clock, opts: { holdQueue?: boolean } = {}): Promise<SmtpApp> {
  const app = await startTestApp({ hostname: 'mx.pigeon.test', ...overrides }, clock ? { clock } : {});
  if (opts.holdQueue) await app.workers.find((w) => w.name === 'delivery')?.stop();
  const account = await app.db('accounts').where({ name: 'default' }).first('id');
  return Object.assign(app, {
    submissionPort: app.listeners['smtp-submission'].port,
    inboundPort: app.listeners['smtp-inbound'].port,
    accountId: account.id as string,
  });
}

/** Domains are another module's: insert a verified one directly. */
export async function addVerifiedDomain(app: SmtpApp, name: string): Promise<void> {
  const now = app.deps.clock.now();
  await app.db('domains').insert({ id: newId('dom'), account_id: app.accountId, name, status: 'verified', created_at: now, verified_at: now });
}

export const liveSender = (app: SmtpApp) => createKey(app, 'live', ['messages:send']);

export type Transport = nodemailer.Transporter<SMTPTransport.SentMessageInfo>;

/** A client as an application configures it: user `apikey`, the key as password, STARTTLS when offered. */
export function submissionClient(port: number, pass: string | null, extra: SMTPTransport.Options & { pool?: boolean; maxConnections?: number } = {}): Transport {
  return nodemailer.createTransport(<SMTPTransport.Options>{
    host: '127.0.0.1',
    port,
    secure: false,
    ...(pass === null ? {} : { auth: { user: 'apikey', pass } }),
    tls: { rejectUnauthorized: false },
    ...extra,
  });
}

/** The error nodemailer rejects with, as code + text ("550 5.7.1 …"). */
export async function refusal(promise: Promise<unknown>): Promise<{ code: number; response: string; command?: string }> {
  try {
    await promise;
  } catch (err) {
    const e = err as { responseCode?: number; response?: string; command?: string; message: string };
    return { code: e.responseCode ?? 0, response: e.response ?? e.message, command: e.command };
  }
  throw new Error('expected the SMTP server to refuse');
}

export const ids = (response: string): string[] => response.match(/msg_[0-9a-z]{26}/g) ?? [];

export function message(headers: Record<string, string>, body = 'Hello from an app.'): string {
  const all = { From: 'App <app@example.com>', To: 'ann@example.org', Subject: 'Hi', Date: 'Mon, 05 Jan 2026 09:00:00 +0000', ...headers };
  const lines = Object.entries(all).filter(([, v]) => v !== '').map(([k, v]) => `${k}: ${v}`);
  return `${lines.join('\r\n')}\r\n\r\n${body}\r\n`;
}

/** A bare SMTP client: write lines (or bytes), read whole replies. */
export class RawSmtp {
  private buffer = '';
  private waiting: Array<() => void> = [];
  private closed = false;
  /** the first reply: 220, or 421 when refused */
  greeting = '';

  private constructor(readonly socket: net.Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      this.buffer += d;
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => undefined);
  }

  static async connect(port: number, localAddress?: string): Promise<RawSmtp> {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const client = new RawSmtp(socket);
    client.greeting = await client.reply();
    return client;
  }

  private wake(): void {
    for (const w of this.waiting.splice(0)) w();
  }

  /** The next complete reply (all lines of a multi-line one), e.g. "250 2.0.0 Ok". */
  async reply(timeoutMs = 3000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = /^(?:\d{3}-[^\r\n]*\r\n)*\d{3}(?: [^\r\n]*)?\r\n/.exec(this.buffer);
      if (match) {
        this.buffer = this.buffer.slice(match[0].length);
        return match[0].trimEnd();
      }
      if (this.closed) return 'closed';
      if (Date.now() > deadline) throw new Error(`no SMTP reply within ${timeoutMs} ms (buffer: ${JSON.stringify(this.buffer)})`);
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  async command(line: string): Promise<string> {
    this.write(`${line}\r\n`);
    return this.reply();
  }

  /** EHLO and AUTH PLAIN with the key. */
  async login(key: string): Promise<void> {
    await this.command('EHLO client.test');
    const reply = await this.command(`AUTH PLAIN ${Buffer.from(`\0apikey\0${key}`).toString('base64')}`);
    if (!reply.startsWith('235')) throw new Error(`login failed: ${reply}`);
  }

  close(): void {
    this.socket.destroy();
  }
}
