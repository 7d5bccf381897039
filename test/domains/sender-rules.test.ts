// The Gmail/Yahoo sender rules per domain (GET /v1/domains/{domain} and pigeon doctor), and one-click unsubscribe
// by default for messages tagged as bulk, through the API and SMTP relay, down to the headers the MX receives.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkSenderRules } from '../../src/domains/doctor';
import { senderRules } from '../../src/domains/sender-rules';
import { getDomain } from '../../src/domains/service';
import { verificationResolver } from '../../src/domains/verify';
import { parseConfig } from '../../src/config';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { submissionClient } from '../smtp/helpers';
import { createKey } from '../support/app';
import { messageRow, pointMx, SENDER_DOMAIN, startWorld, type World } from '../delivery/world';

describe('sender rules', () => {
  let sink: SmtpSink;
  let world: World;

  before(async () => {
    sink = await startSmtpSink({ host: '127.0.0.2' });
    world = await startWorld({ port: sink.port });
    pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.2' }]);
  });
  after(async () => {
    await world.stop();
    await sink.close();
  });

  const rulesOf = async (name: string) => {
    const res = await world.app.api.get(`/v1/domains/${name}`);
    assert.equal(res.status, 200, res.text);
    return res.body.sender_rules;
  };

  it('a verified domain with DMARC p=none: DKIM aligned, SPF not (the bounce domain is the appliance\'s), one-click on for bulk tags', async () => {
    const rules = await rulesOf(SENDER_DOMAIN);
    assert.equal(rules.meets_requirements, true);
    assert.equal(rules.dkim_aligned.ok, true);
    assert.match(rules.dkim_aligned.detail, /d=sender\.test/);
    assert.equal(rules.spf_aligned.ok, false);
    assert.match(rules.spf_aligned.detail, /mta\.pigeon\.test/);
    assert.deepEqual([rules.dmarc.ok, rules.dmarc.policy], [true, 'none']);
    assert.match(rules.dmarc.detail, /quarantine or reject/);
    assert.deepEqual([rules.one_click_unsubscribe.ok, rules.one_click_unsubscribe.bulk_tags], [true, ['bulk', 'marketing', 'newsletter']]);
  });

  it('SPF aligns when the bounce domain is under the From domain, unless DMARC asks strict (aspf=s)', async () => {
    const bundle = await getDomain({ db: world.app.db, config: world.app.config, clock: world.clock }, world.accountId, SENDER_DOMAIN);
    const resolver = verificationResolver(world.app.config);
    const config = parseConfig({ ...world.app.config, delivery: { ...world.app.config.delivery, bounceDomain: 'bounces.sender.test' } });
    assert.equal((await senderRules(resolver, config, bundle)).spfAligned.ok, true);
    world.dns.set(`_dmarc.${SENDER_DOMAIN}`, [{ type: 'TXT', data: 'v=DMARC1; p=reject; aspf=s' }]);
    const strict = await senderRules(resolver, config, bundle);
    assert.equal(strict.spfAligned.ok, false);
    assert.equal(strict.dmarc.policy, 'reject');
  });

  it('no DMARC record: the domain API and pigeon doctor say so and what to publish', async () => {
    world.dns.remove(`_dmarc.${SENDER_DOMAIN}`);
    const rules = await rulesOf(SENDER_DOMAIN);
    assert.equal(rules.meets_requirements, false);
    assert.deepEqual([rules.dmarc.ok, rules.dmarc.policy], [false, null]);
    assert.match(rules.dmarc.detail, /publish at least "v=DMARC1; p=none"/);
    const [line] = (await checkSenderRules(world.app.config)).filter((r) => r.name === `sender rules ${SENDER_DOMAIN}`);
    assert.equal(line.status, 'fail');
    assert.match(line.detail, /^DMARC: no DMARC record/);
    world.dns.set(`_dmarc.${SENDER_DOMAIN}`, [{ type: 'TXT', data: 'v=DMARC1; p=quarantine' }]);
    const [fixed] = (await checkSenderRules(world.app.config)).filter((r) => r.name === `sender rules ${SENDER_DOMAIN}`);
    assert.equal(fixed.status, 'ok', fixed.detail);
  });

  it('through the API, a bulk tag turns one-click unsubscribe on unless the send says otherwise or brings its own header', async () => {
    const send = async (extra: Record<string, unknown>) => {
      const res = await world.live.post('/v1/messages/send', { from: `news@${SENDER_DOMAIN}`, to: ['ann@dest.test'], subject: 'S', text: 'T', ...extra });
      assert.equal(res.status, 202, res.text);
      return Boolean((await messageRow(world, res.body.data[0].id)).list_unsubscribe);
    };
    assert.equal(await send({ tags: ['Newsletter'] }), true);
    assert.equal(await send({ tags: ['receipt'] }), false);
    assert.equal(await send({}), false);
    assert.equal(await send({ tags: ['marketing'], list_unsubscribe: false }), false);
    assert.equal(await send({ tags: ['bulk'], headers: { 'List-Unsubscribe': '<mailto:unsub@sender.test>' } }), false);
  });

  it('over SMTP, X-Pigeon-Tags: bulk gets the one-click headers at the MX; a message with its own List-Unsubscribe keeps it', async () => {
    const key = await createKey(world.app, 'live', ['messages:send']);
    const client = submissionClient(world.app.listeners['smtp-submission'].port, key);
    const before = sink.messages.length;
    await client.sendMail({ from: `news@${SENDER_DOMAIN}`, to: 'bob@dest.test', subject: 'Weekly', text: 'News', headers: { 'X-Pigeon-Tags': 'bulk' } });
    await client.sendMail({
      from: `news@${SENDER_DOMAIN}`, to: 'carl@dest.test', subject: 'Own', text: 'News',
      headers: { 'X-Pigeon-Tags': 'bulk', 'List-Unsubscribe': '<mailto:leave@sender.test>' },
    });
    await world.mta.runOnce();
    const arrived = (await sink.waitFor(before + 2)).slice(before);
    const bob = arrived.find((m) => m.rcptTo[0] === 'bob@dest.test')!.raw.toString('latin1');
    assert.match(bob, /^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m);
    assert.match(bob, /^List-Unsubscribe:\s+<http:\/\/127\.0\.0\.1:0\/[^>]+>/m); // folded when long
    const carl = arrived.find((m) => m.rcptTo[0] === 'carl@dest.test')!.raw.toString('latin1');
    assert.match(carl, /^List-Unsubscribe: <mailto:leave@sender\.test>$/m);
    assert.doesNotMatch(carl, /List-Unsubscribe-Post/);
    client.close();
  });
});
