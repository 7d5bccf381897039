/**
 * Webhooks in the console (Chromium): create one with the event picker (the
 * secret shown once), let a delivery fail all six attempts (the clock is the
 * only fake part), and redeliver it from the delivery log.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { dispatch, HOUR, MINUTE, recordMessageEvent, startWebhookApp } from '../webhooks/helpers';
import { createUser, launchBrowser, signIn, skipBrowser } from './browser';

const ADMIN = { email: 'ops@example.com', role: 'admin' as const, account: 'default', password: 'a long admin password' };

describe('console: webhooks in Chromium', { skip: skipBrowser }, () => {
  it('creates a webhook, shows the secret once, and redelivers one failed delivery, then all failed ones, from the log', async () => {
    const clock = new FakeClock();
    // The retries span 82 hours of fake time: the session must outlive them (idle limit one week).
    const app = await startWebhookApp({ console: { sessionIdleMinutes: 7 * 24 * 60 } }, { clock });
    let answer = 500;
    const receiver = await startWebhookReceiver({ respond: () => ({ status: answer, body: `answer ${answer}` }) });
    await createUser(app, ADMIN);
    const browser = await launchBrowser();
    try {
      const { page } = browser;
      await signIn(page, app.http.url, ADMIN.email, ADMIN.password);
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByLabel('Endpoint URL').fill(receiver.url);
      assert.equal(await page.getByLabel('message.delivered').isChecked(), true);
      await page.getByLabel('message.opened').check();
      await page.getByRole('button', { name: 'Create webhook' }).click();
      const secret = await page.locator('code.secret').textContent();
      assert.match(secret ?? '', /^whsec_/);
      const hooks = (await app.api.get('/v1/webhooks')).body.data;
      assert.equal(hooks.length, 1);
      assert.deepEqual([...hooks[0].events].sort(), ['message.bounced', 'message.delivered', 'message.opened']);

      await recordMessageEvent(app, { type: 'message.delivered' });
      await recordMessageEvent(app, { type: 'message.bounced', fields: { type: 'hard' } });
      await dispatch(app);
      for (const gap of [5 * MINUTE, 30 * MINUTE, 2 * HOUR, 8 * HOUR, 24 * HOUR, 48 * HOUR]) {
        clock.advance(gap);
        await dispatch(app);
      }
      assert.equal(receiver.requests.length, 12, 'six attempts each, then both deliveries failed');
      const [one, other] = (await app.api.get(`/v1/webhooks/${hooks[0].id}/deliveries`)).body.data.map((d: { id: string }) => d.id);

      await page.getByRole('link', { name: receiver.url }).click();
      const first = page.getByRole('article', { name: `Delivery ${one}` });
      const second = page.getByRole('article', { name: `Delivery ${other}` });
      await first.getByText('failed', { exact: true }).waitFor();
      await first.getByRole('button', { name: 'Request and response' }).click();
      await first.getByText(/#6 .*HTTP 500/).waitFor();
      assert.match(await first.locator('pre').first().textContent() ?? '', /"event": ?"message\./, 'the request body is shown');
      answer = 200;
      await first.getByRole('button', { name: 'Redeliver', exact: true }).click();
      await first.getByText('failed', { exact: true }).waitFor({ state: 'detached' }); // pending, or already sent: the redelivery wakes the dispatcher
      await dispatch(app);
      await first.getByText('succeeded', { exact: true }).waitFor(); // the log refreshes by itself
      assert.equal(receiver.requests.length, 13);
      assert.equal(await second.getByText('failed', { exact: true }).count(), 1, 'only the one redelivered');

      await page.getByRole('button', { name: 'Redeliver all failed' }).click();
      await page.getByText('1 failed deliveries queued again').waitFor();
      await dispatch(app);
      await second.getByText('succeeded', { exact: true }).waitFor();
      assert.equal(receiver.requests.length, 14);
      assert.deepEqual(receiver.requests.slice(12).map((r) => r.body.toString()).sort(), receiver.requests.slice(0, 2).map((r) => r.body.toString()).sort(), 'the same events again');
    } finally {
      await browser.close();
      await receiver.close();
      await app.stop();
    }
  });
});
