/**
 * `npm run bench dkim [--seconds=3] [--threads=0,1,2] [--size=5000]`: DKIM
 * signing throughput, 5 KB messages, RSA-2048 alone and RSA-2048 plus an
 * Ed25519 second signature, on the main thread (0) and on N signing threads
 * (createSigner, as the MTA uses it). 200 signatures are kept in flight;
 * messages/s is what completes.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { createSigner } from '../src/delivery/signer';
import type { SigningKey } from '../src/delivery/dkim';

const pem = (k: crypto.KeyObject) => k.export({ type: 'pkcs8', format: 'pem' }).toString();

function message(size: number): Buffer {
  const head = 'From: Shop <news@shop.bench>\r\nTo: someone@dest.bench\r\nSubject: Your order has shipped\r\nDate: Mon, 05 Jan 2026 09:00:00 +0000\r\n' +
    'Message-ID: <abc.123@shop.bench>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n' +
    'List-Unsubscribe: <https://u.shop.bench/x>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n\r\n';
  const line = 'Your order of three items left our warehouse today and  is on its way.\r\n';
  return Buffer.from(head + line.repeat(Math.max(1, Math.round((size - head.length) / line.length))));
}

async function rate(seconds: number, sign: () => Promise<unknown>): Promise<number> {
  const until = performance.now() + seconds * 1000;
  let done = 0;
  const lane = async () => {
    while (performance.now() < until) {
      await sign();
      done++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: 200 }, lane));
  return done / ((performance.now() - started) / 1000);
}

export async function run(args: string[]): Promise<void> {
  const opt = (name: string, def: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? def;
  const seconds = Number(opt('seconds', '3'));
  const threads = opt('threads', `0,1,${os.availableParallelism()}`).split(',').map(Number);
  const raw = message(Number(opt('size', '5000')));
  const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const ed = crypto.generateKeyPairSync('ed25519').privateKey;
  const rsaKey: SigningKey = { domain: 'shop.bench', selector: 'rsa', algorithm: 'rsa', privateKeyPem: pem(rsa) };
  const bothKey: SigningKey = { ...rsaKey, ed25519: { selector: 'ed', privateKeyPem: pem(ed) } };

  console.log(`dkim benchmark: ${raw.length}-byte messages, ${seconds} s per row, 200 in flight`);
  console.log(`machine: ${os.availableParallelism()} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log('| threads | RSA-2048 msg/s | RSA-2048 + Ed25519 msg/s |\n|---|---|---|');
  for (const n of threads) {
    const signer = createSigner(n);
    try {
      const now = Date.now();
      const one = await rate(seconds, () => signer.sign(raw, rsaKey, now));
      const two = await rate(seconds, () => signer.sign(raw, bothKey, now));
      console.log(`| ${n === 0 ? 'main' : n} | ${Math.round(one)} | ${Math.round(two)} |`);
    } finally {
      await signer.close();
    }
  }
}
