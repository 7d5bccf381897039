/**
 * Live messages in the console (Chromium), delivered by the real MTA to a
 * loopback SMTP sink: the HTML preview is sandboxed (its script does not run),
 * the attempt and events are shown, and a deferred message is retried now.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startSmtpSink } from '../support/smtp-sink';
import { pointMx, SENDER_DOMAIN, startWorld } from '../delivery/world';
import { createUser, launchBrowser, signIn, skipBrowser } from './browser';

const ADMIN = { email: 'admin@example.com', role: 'admin' as const, account: 'default', password: 'a long admin password' };

describe('console: live messages in Chromium', { skip: skipBrowser }, () => {
  it('shows a live message arriving in the list, in a sandboxed preview with its attempt, shows the SMTP conversation, retries a deferred one now, and pauses and resumes its destination on the operator screen', async () => {
    const sink = await startSmtpSink({ reply: (ctx) => (ctx.stage === 'rcpt' && ctx.rcpt?.endsWith('@slow.test') ? { code: 451, message: '4.7.1 Greylisted' } : undefined) });
    const world = await startWorld({ port: sink.port });
    const browser = await launchBrowser();
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      pointMx(world.dns, 'slow.test', [{ name: 'mx.slow.test', address: '127.0.0.1' }]);
      await createUser(world.app, ADMIN);
      const { page } = browser;
      await signIn(page, world.app.http.url, ADMIN.email, ADMIN.password);
      await page.getByRole('link', { name: 'Messages' }).click();
      await page.getByText('0 messages · refreshes every 5 seconds').waitFor();

      const html = '<p>Hello <b>Ada</b></p><script>parent.document.title = "script ran"; document.body.append("script ran")</script>';
      const sent = await world.live.post('/v1/messages/send', { from: `app@${SENDER_DOMAIN}`, to: ['ada@dest.test', 'bob@slow.test'], subject: 'Your receipt', html, text: 'Hello Ada' });
      assert.equal(sent.status, 202);
      const [delivered, deferred] = (sent.body.data as Array<{ id: string }>).map((d) => d.id);
      await world.mta.runOnce();
      await sink.waitFor(1);
      const row = page.getByRole('row').filter({ hasText: 'ada@dest.test' });
      await row.getByText('delivered').waitFor(); // the list refreshes by itself
      await row.getByRole('link', { name: 'ada@dest.test' }).click();
      assert.ok(page.url().endsWith(`#/messages/${delivered}`));
      const preview = page.frameLocator('iframe[title="HTML preview"]');
      await preview.getByText('Ada').waitFor();
      assert.equal(await page.locator('iframe[title="HTML preview"]').getAttribute('sandbox'), '');
      assert.equal(await preview.getByText('script ran').count(), 0, 'the script in the mail did not run');
      assert.equal(await page.title(), 'Pigeon console');
      const attempt = page.getByRole('article', { name: 'Attempt 1' });
      assert.match(await attempt.textContent() ?? '', /delivered.*mx\.dest\.test/s);
      const transcript = await attempt.locator('pre.transcript').textContent() ?? '';
      assert.match(transcript, /EHLO/);
      assert.match(transcript, /RCPT TO:<ada@dest\.test>/);
      assert.doesNotMatch(transcript, /Hello Ada/, 'the body is not in the transcript');
      assert.match(await page.getByRole('list', { name: 'Events' }).textContent() ?? '', /queued.*sent.*delivered/s);

      await page.goto(`${world.app.http.url}/#/messages/${deferred}`);
      await page.getByText('deferred', { exact: true }).first().waitFor();
      await page.getByRole('button', { name: 'Retry now' }).click();
      await page.getByRole('button', { name: 'Retry now' }).waitFor({ state: 'detached' }); // the message is due now, not deferred
      await world.mta.runOnce();
      await page.getByRole('article', { name: 'Attempt 2' }).waitFor(); // the detail refreshes by itself
      const after = (await world.live.get(`/v1/messages/${deferred}`)).body;
      assert.equal(after.attempt_count, 2, 'the retry was a second attempt, made at once');

      // The operator screen: the deferred destination, paused and resumed.
      await page.getByRole('link', { name: 'Operator' }).click();
      const queue = page.getByRole('table', { name: 'Queue by destination' });
      const destination = queue.getByRole('row').filter({ hasText: 'slow.test' });
      await destination.getByRole('button', { name: 'Pause' }).click();
      await destination.getByRole('button', { name: 'Resume' }).waitFor();
      assert.equal((await world.app.db('paused_destinations').where({ domain: 'slow.test' })).length, 1);
      await destination.getByRole('button', { name: 'Resume' }).click();
      await destination.getByRole('button', { name: 'Pause' }).waitFor();
      assert.equal((await world.app.db('paused_destinations').where({ domain: 'slow.test' })).length, 0);
      await page.getByRole('list', { name: 'Doctor checks' }).waitFor();
    } finally {
      await browser.close();
      await world.stop();
      await sink.close();
    }
  });
});
