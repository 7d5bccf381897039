/**
 * The floor of the stack: what Node with this project's own libraries can
 * relay on this machine when everything that makes Pigeon an MTA is taken
 * away. An HTTP server (node:http, no koa) takes the same JSON send as
 * /v1/messages/send, builds the MIME with nodemailer's MailComposer, signs it
 * with Pigeon's DKIM signer on its worker threads (RSA-2048), and relays it
 * over a nodemailer SMTP pool to the sink; it answers 202 as soon as the
 * message is built. No database, no queue, no durability, no DNS, no
 * validation, no events: nothing is written anywhere, so nothing survives a
 * crash. `npm run bench compare -- --only=floor` runs it beside Postfix and
 * Pigeon: Pigeon's end-to-end figure cannot exceed it, and where it is below
 * Postfix, so is any design on this stack.
 *
 * argv[2]: JSON { sinkPort, connections, sign: boolean }.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import nodemailer from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import { createSigner } from '../src/delivery/signer';
import type { SigningKey } from '../src/delivery/dkim';
import { answerBenchParent } from './child';

interface FloorOptions {
  sinkPort: number;
  connections: number;
  sign: boolean;
}

interface SendBody {
  from: string;
  to: string[];
  subject: string;
  text: string;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function main(): Promise<void> {
  const o = JSON.parse(process.argv[2]) as FloorOptions;
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const key: SigningKey = { domain: 'shop.bench', selector: 'floor', algorithm: 'rsa', privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
  const signer = createSigner('auto');
  // Each pooled connection with Nagle off, as Pigeon's own client has it (delivery/smtp-client.ts): otherwise the
  // final "." of every message waits for the sink's delayed ACK (~40 ms), and the floor measures that instead.
  const getSocket = (_opts: unknown, callback: (err: Error | null, socket?: { connection: net.Socket }) => void) => {
    const socket = net.connect({ host: '127.0.0.1', port: o.sinkPort }, () => callback(null, { connection: socket }));
    socket.setNoDelay(true);
    socket.once('error', (err) => callback(err));
  };
  const transport = nodemailer.createTransport({ pool: true, host: '127.0.0.1', port: o.sinkPort, maxConnections: o.connections, maxMessages: Infinity, secure: false, ignoreTLS: true, getSocket } as Parameters<typeof nodemailer.createTransport>[0]);
  let failed = 0;

  const relay = async (body: SendBody) => {
    const raw = await new MailComposer({ from: body.from, to: body.to, subject: body.subject, text: body.text, messageId: `<${crypto.randomUUID()}@shop.bench>` }).compile().build();
    const signed = o.sign ? await signer.sign(raw, key, Date.now()) : { raw };
    if (!('raw' in signed)) throw new Error('signing failed');
    await transport.sendMail({ envelope: { from: body.from, to: body.to }, raw: signed.raw });
  };

  const server = http.createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as SendBody;
    res.writeHead(202, { 'Content-Type': 'application/json' }).end(`{"id":"${crypto.randomUUID()}"}`);
    relay(body).catch(() => failed++);
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const app = {
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      transport.close();
      await signer.close();
      if (failed) console.error(`floor: ${failed} relays failed`);
    },
  };
  answerBenchParent(app);
  process.send?.({ type: 'ready', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
