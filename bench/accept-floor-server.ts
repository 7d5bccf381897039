/**
 * The floor of the send API's accept on this stack: what koa, @koa/router,
 * koa-body and nodemailer's MailComposer (through Pigeon's own MimePool, on
 * the same worker threads and with the same composer speedups) can answer on
 * this machine when everything else a send does is taken away. It routes
 * POST /v1/messages/send, parses the JSON body as the API does (koa-body,
 * strict, the raw text kept), builds the message's MIME and answers 202 with
 * an id. No authentication, no validation, no database, no durability, no
 * events: nothing is written anywhere. `npm run bench compare -- --only=api`
 * runs it beside Pigeon with its MTA paused: Pigeon's accept rate cannot
 * exceed it, so a target above it is beyond this stack on this machine.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import Router from '@koa/router';
import { koaBody } from 'koa-body';
import { MimePool } from '../src/messages/mime-pool';
import type { Address } from '../src/messages/addresses';
import { answerBenchParent } from './child';

interface SendBody {
  from: string;
  to: string[];
  subject: string;
  text: string;
}

/** The address as the API would hold it, without the parsing and checks the API does. */
const address = (email: string): Address => ({ email, name: null, domain: email.slice(email.indexOf('@') + 1) });

async function main(): Promise<void> {
  const mime = new MimePool('auto');
  const router = new Router();
  router.post('/v1/messages/send', koaBody({ json: true, urlencoded: false, text: false, jsonStrict: true, includeUnparsed: true, jsonLimit: '10mb' }), async (ctx) => {
    const body = ctx.request.body as unknown as SendBody;
    const id = crypto.randomUUID();
    await mime.compose({ from: address(body.from), to: body.to.map(address), cc: [], replyTo: [], subject: body.subject, text: body.text, headers: [], attachments: [], messageId: `${id}@shop.bench`, date: Date.now() });
    ctx.status = 202;
    ctx.body = { id };
  });
  const koa = new Koa();
  koa.use(router.routes());
  const server = http.createServer(koa.callback());
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  answerBenchParent({
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      await mime.stop();
    },
  });
  process.send?.({ type: 'ready', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
