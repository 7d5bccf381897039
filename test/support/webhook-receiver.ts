/*
 * An HTTP(S) endpoint standing in for a customer's webhook receiver. It records
 * every request byte for byte (signatures are computed over the raw body) and
 * answers as the test scripts it: errors, slow answers, answers that never come,
 * redirects. Loopback only, so the dispatcher under test must be configured to
 * allow private addresses.
 */
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import { testCertificate } from './tls-cert';
import { arrivals } from './wait';

export interface WebhookRequest {
  /** 1 for the first request this receiver got, 2 for the next... */
  n: number;
  method: string;
  /** path with query string, as sent */
  path: string;
  /** lower-cased names, as node:http gives them */
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  receivedAt: number;
  /** the body parsed as JSON */
  json(): unknown;
}

export interface WebhookResponse {
  /** default 200 (302 with redirectTo) */
  status?: number;
  body?: string | Buffer | object;
  headers?: Record<string, string>;
  /** answer after this many milliseconds */
  delayMs?: number;
  /** never answer; the socket stays open until the client gives up or close() */
  hang?: boolean;
  /** answer with a redirect to this URL */
  redirectTo?: string;
}

export interface ReceiverOptions {
  /** serve HTTPS with the self-signed test certificate (trust it with `ca`) */
  https?: boolean;
  /** default 127.0.0.1 */
  host?: string;
  /** default 0 (any free port); a fixed one lets a second receiver share a port on another loopback address */
  port?: number;
  /** path of `url`; default /webhook (any path is answered) */
  path?: string;
  /** undefined answers 200 */
  respond?: (req: WebhookRequest, n: number) => WebhookResponse | undefined | Promise<WebhookResponse | undefined>;
}

export interface WebhookReceiver {
  /** origin + path, e.g. http://127.0.0.1:PORT/webhook */
  url: string;
  origin: string;
  port: number;
  /** the certificate to trust for HTTPS, undefined for HTTP */
  ca?: string;
  requests: WebhookRequest[];
  /** TCP connections accepted so far (keep-alive reuse shows as fewer connections than requests) */
  connections(): number;
  /** resolves with requests once at least count have arrived; default timeout 2000 ms */
  waitFor(count: number, timeoutMs?: number): Promise<WebhookRequest[]>;
  /** stops listening and destroys every connection, hanging ones included */
  close(): Promise<void>;
}

export async function startWebhookReceiver(opts: ReceiverOptions = {}): Promise<WebhookReceiver> {
  const host = opts.host ?? '127.0.0.1';
  const requests: WebhookRequest[] = [];
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const timers = new Set<NodeJS.Timeout>();
  let origin = '';
  const arrived = arrivals(requests, (count, ms) => `webhook receiver ${origin}: expected ${count} request(s) within ${ms} ms, got ${requests.length}`);

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const record: WebhookRequest = {
      n: requests.length + 1,
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body,
      receivedAt: Date.now(),
      json: () => JSON.parse(body.toString('utf8')),
    };
    requests.push(record);
    arrived.notify();

    const answer = (await opts.respond?.(record, record.n)) ?? {};
    if (answer.hang) return;
    if (answer.delayMs) await sleep(answer.delayMs, timers);
    if (res.destroyed) return;
    send(res, answer);
  };

  const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  };
  const cert = opts.https ? testCertificate() : undefined;
  const server = cert ? https.createServer(cert, listener) : http.createServer(listener);
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    connections++;
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  origin = `${cert ? 'https' : 'http'}://${host}:${port}`;

  return {
    url: origin + (opts.path ?? '/webhook'),
    origin,
    port,
    ca: cert?.cert,
    requests,
    connections: () => connections,
    waitFor: arrived.waitFor,
    close() {
      for (const timer of timers) clearTimeout(timer);
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}

function send(res: http.ServerResponse, answer: WebhookResponse): void {
  const headers: Record<string, string> = { ...answer.headers };
  let status = answer.status ?? 200;
  if (answer.redirectTo) {
    headers.location = answer.redirectTo;
    if (!answer.status) status = 302;
  }
  let body: string | Buffer = '';
  if (Buffer.isBuffer(answer.body) || typeof answer.body === 'string') {
    body = answer.body;
  } else if (answer.body !== undefined) {
    body = JSON.stringify(answer.body);
    headers['content-type'] ??= 'application/json';
  }
  res.writeHead(status, headers).end(body);
}

function sleep(ms: number, timers: Set<NodeJS.Timeout>): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      resolve();
    }, ms);
    timers.add(timer);
  });
}
