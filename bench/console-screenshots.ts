/**
 * `npm run screenshots`: every console screen at desktop (1280×800) and phone
 * (390×844) width, written to docs/screenshots/<screen>-<width>.png for the
 * README. The data comes from the delivery test world: a verified sending
 * domain, messages delivered to a loopback SMTP sink and one deferred, a
 * webhook, suppressions, keys.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startSmtpSink } from '../test/support/smtp-sink';
import { startWebhookReceiver } from '../test/support/webhook-receiver';
import { liveApi } from '../test/support/app';
import { pointMx, sendBatch, startWorld } from '../test/delivery/world';
import { createUser, launchBrowser, signIn, skipBrowser } from '../test/console/browser';

const OUT = path.resolve(__dirname, '../../docs/screenshots');
const ADMIN = { email: 'admin@example.com', role: 'admin' as const, account: 'default', password: 'a long admin password' };
const WIDTHS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } };

async function main(): Promise<void> {
  if (skipBrowser) throw new Error(skipBrowser);
  const sink = await startSmtpSink({ reply: (ctx) => (ctx.stage === 'rcpt' && ctx.rcpt?.endsWith('@slow.test') ? { code: 451, message: '4.7.1 Greylisted, try again later' } : undefined) });
  const receiver = await startWebhookReceiver();
  const world = await startWorld({ port: sink.port });
  try {
    const { messageId, webhookId } = await seed(world, receiver.url);
    await createUser(world.app, ADMIN);
    fs.mkdirSync(OUT, { recursive: true });
    const screens: Array<[string, string]> = [
      ['overview', 'overview'], ['messages', 'messages'], ['message', `messages/${messageId}`], ['domains', 'domains/sender.test'],
      ['webhooks', `webhooks/${webhookId}`], ['suppressions', 'suppressions'],
      ['ip-pools', 'ip-pools'], ['api-keys', 'api-keys'], ['settings', 'settings'], ['operator', 'operator'],
    ];
    for (const [width, viewport] of Object.entries(WIDTHS)) {
      const browser = await launchBrowser(viewport);
      try {
        const { page } = browser;
        await page.goto(`${world.app.http.url}/`);
        await page.getByRole('button', { name: 'Sign in' }).waitFor();
        await shoot(page, `sign-in-${width}`);
        await signIn(page, world.app.http.url, ADMIN.email, ADMIN.password);
        for (const [name, hash] of screens) {
          await page.goto(`${world.app.http.url}/#/${hash}`);
          await page.waitForLoadState('networkidle');
          await page.waitForTimeout(300); // let the chart and late lists settle before the picture
          await shoot(page, `${name}-${width}`, name === 'message' && width === 'desktop');
        }
      } finally {
        await browser.close();
      }
    }
  } finally {
    await world.stop();
    await sink.close();
    await receiver.close();
  }
}

/** Sends mail, adds a webhook, suppressions and keys; returns a delivered message and the webhook. */
async function seed(world: Awaited<ReturnType<typeof startWorld>>, hookUrl: string): Promise<{ messageId: string; webhookId: string }> {
  const admin = await liveApi(world.app);
  pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
  pointMx(world.dns, 'slow.test', [{ name: 'mx.slow.test', address: '127.0.0.1' }]);
  const hook = await admin.post('/v1/webhooks', { url: hookUrl, events: ['message.delivered', 'message.bounced'] });
  await admin.post('/v1/domains', { name: 'mail.example.com' });
  const receipt = await world.live.post('/v1/messages/send', {
    from: 'Shop <app@sender.test>', to: ['alice@dest.test', 'bob@dest.test', 'dave@dest.test'], subject: 'Your receipt #1042', tags: ['receipt'],
    html: '<h2 style="color:#1d4ed8">Thanks for your order</h2><p>Order <b>#1042</b>: 2 × Widget, total €40.00.</p><p><img src="https://cdn.example.net/pixel.gif" alt="">Questions? Reply to this mail.</p>',
    text: 'Thanks for your order #1042: 2 x Widget, total EUR 40.00.',
  });
  const first = receipt.body.data[0].id as string;
  await sendBatch(world, { to: 'carol@slow.test', subject: 'Password reset' });
  await sendBatch(world, { to: 'erin@dest.test', subject: 'Weekly digest', sendAt: world.clock.now() + 3_600_000 });
  await world.mta.runOnce();
  await admin.post('/v1/suppressions', { suppressions: [{ email: 'bounced@example.org', reason: 'hard_bounce' }, { email: 'angry@example.org', reason: 'complaint' }], reason: 'manual' });
  await admin.post('/v1/api-keys', { name: 'billing service', mode: 'live', scopes: ['messages:send', 'messages:read'] });
  return { messageId: first, webhookId: hook.body.id };
}

/** The viewport only (files stay small), or the whole page where the end of it is the point (the SMTP conversation). */
async function shoot(page: import('playwright-core').Page, name: string, fullPage = false): Promise<void> {
  const file = path.join(OUT, `${name}.png`);
  const transcript = page.locator('details:has(> .transcript)');
  if (fullPage && (await transcript.count())) await transcript.first().evaluate((d) => d.setAttribute('open', ''));
  await page.screenshot({ path: file, fullPage });
  console.log(`${path.relative(process.cwd(), file)}\t${Math.round(fs.statSync(file).size / 1024)} KiB`);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
