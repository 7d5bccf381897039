/**
 * A delivery world for the compatibility tests: the appliance with a verified
 * sending domain, a DKIM-verifying loopback SMTP sink as MX of dest.test, a
 * live key, and helpers to deliver what was accepted and read it as a
 * receiver does (DKIM verdict and parsed MIME).
 */
import type { ParsedMail } from 'mailparser';
import { simpleParser } from 'mailparser';
import type { ConfigInput } from '../../src/config';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { verifyDkim } from '../support/mail';
import { createKey } from '../support/app';
import { pointMx, startWorld, SENDER_DOMAIN, type World } from '../delivery/world';

export { SENDER_DOMAIN };
export const DEST = 'dest.test';

export interface CompatWorld {
  world: World;
  sink: SmtpSink;
  /** A live key with messages:send and messages:read. */
  liveKey: string;
  /** Base URL of the API port. */
  url: string;
  stop(): Promise<void>;
}

export async function startCompatWorld(config: ConfigInput = {}): Promise<CompatWorld> {
  const sink = await startSmtpSink({ host: '127.0.0.1' });
  const world = await startWorld({ port: sink.port, config });
  pointMx(world.dns, DEST, [{ name: `mx.${DEST}`, address: '127.0.0.1' }]);
  const liveKey = await createKey(world.app, 'live', ['messages:send', 'messages:read']);
  return {
    world, sink, liveKey, url: world.app.http.url,
    async stop() {
      await world.stop();
      await sink.close();
    },
  };
}

export interface Delivered {
  rcptTo: string[];
  dkim: string[];
  mail: ParsedMail;
}

/** Runs the MTA and returns the first `count` messages the sink has received, each DKIM-checked and parsed. */
export async function deliver(cw: CompatWorld, count: number): Promise<Delivered[]> {
  await cw.world.mta.runOnce();
  const received = await cw.sink.waitFor(count, 20_000);
  return Promise.all(received.slice(0, count).map(async (r) => ({
    rcptTo: r.rcptTo,
    dkim: (await verifyDkim(r.raw, cw.world.dns.address)).map((d) => `${d.signingDomain}:${d.result}`),
    mail: await simpleParser(r.raw),
  })));
}

/** The copy delivered to `rcpt`. */
export function deliveredTo(all: Delivered[], rcpt: string): Delivered {
  const found = all.find((d) => d.rcptTo.includes(rcpt));
  if (!found) throw new Error(`nothing delivered to ${rcpt}; got ${all.map((d) => d.rcptTo.join(',')).join(' | ')}`);
  return found;
}

/** The data of the message.queued event of a message (what webhooks carry). */
export async function queuedEvent(cw: CompatWorld, messageId: string): Promise<Record<string, unknown>> {
  const row = await cw.world.app.db('events').where({ message_id: messageId, type: 'message.queued' }).first('data');
  if (!row) throw new Error(`no message.queued event for ${messageId}`);
  return JSON.parse(row.data as string) as Record<string, unknown>;
}

export async function storeTemplate(cw: CompatWorld, name: string, t: { subject: string; html?: string; text?: string }): Promise<string> {
  const res = await cw.world.live.post('/v1/templates', { name, ...t });
  if (res.status !== 201 && res.status !== 200) throw new Error(`template not stored: ${res.status} ${res.text}`);
  return res.body.id as string;
}

/** A 1×1 PNG, base64. */
export const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
