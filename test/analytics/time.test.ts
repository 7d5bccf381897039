import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildBuckets, cachedTimeZones, isTimeZone, localIso, offsetAt, wallToInstant } from '../../src/analytics/time';
import { parseInstant, resolveQuery } from '../../src/analytics/range';
import { rangeParts } from '../../src/analytics/queries';
import { ApiError } from '../../src/http/errors';

const H = 3_600_000;
const caller = { accountId: 'acc', mode: 'test' as const };
const starts = (b: Array<{ start: number; end: number }>, tz: string) => b.map((x) => `${localIso(x.start, tz)}..${localIso(x.end, tz)}`);

test('day buckets follow DST: the spring-forward day has 23 hours and the fall-back day 25', () => {
  const tz = 'Europe/Berlin';
  const spring = buildBuckets(Date.UTC(2026, 2, 27, 23), Date.UTC(2026, 2, 30, 22), 'day', tz);
  assert.deepEqual(starts(spring, tz), [
    '2026-03-28T00:00:00+01:00..2026-03-29T00:00:00+01:00',
    '2026-03-29T00:00:00+01:00..2026-03-30T00:00:00+02:00',
    '2026-03-30T00:00:00+02:00..2026-03-31T00:00:00+02:00',
  ]);
  assert.deepEqual(spring.map((b) => (b.last - b.first) / H), [24, 23, 24]);
  const autumn = buildBuckets(Date.UTC(2026, 9, 23, 22), Date.UTC(2026, 9, 25, 23), 'day', tz);
  assert.deepEqual(autumn.map((b) => (b.last - b.first) / H), [24, 25]);
  assert.equal(localIso(autumn[1].start, tz), '2026-10-25T00:00:00+02:00');
  assert.equal(localIso(autumn[1].end, tz), '2026-10-26T00:00:00+01:00');
});

test('week buckets start on Monday in the zone; hour buckets are the UTC hours labelled in the zone', () => {
  const tz = 'America/New_York';
  const weeks = buildBuckets(Date.UTC(2026, 2, 1, 5), Date.UTC(2026, 2, 16, 4), 'week', tz);
  assert.deepEqual(weeks.map((w) => localIso(w.start, tz)), ['2026-02-23T00:00:00-05:00', '2026-03-02T00:00:00-05:00', '2026-03-09T00:00:00-04:00']);
  assert.equal(weeks[0].first, Date.UTC(2026, 2, 1, 5), 'the first bucket is clipped to the range');
  assert.equal((weeks[1].last - weeks[1].first) / H, 7 * 24 - 1, 'the week with the DST change is an hour short');
  assert.equal((weeks[2].last - weeks[2].first) / H, 7 * 24);
  const hours = buildBuckets(Date.UTC(2026, 2, 8, 6), Date.UTC(2026, 2, 8, 8), 'hour', tz);
  assert.deepEqual(hours.map((h) => localIso(h.start, tz)), ['2026-03-08T01:00:00-05:00', '2026-03-08T03:00:00-04:00']);
});

test('zones with half-hour offsets: a day is the UTC hours whose start falls on that local date', () => {
  const tz = 'Asia/Kolkata';
  const days = buildBuckets(Date.UTC(2026, 0, 1, 19), Date.UTC(2026, 0, 3, 19), 'day', tz);
  assert.deepEqual(days.map((d) => [localIso(d.start, tz), (d.last - d.first) / H]), [['2026-01-02T00:00:00+05:30', 24], ['2026-01-03T00:00:00+05:30', 24]]);
  const q = resolveQuery({ from: '2026-01-02', to: '2026-01-02', tz }, caller, 0);
  assert.deepEqual([new Date(q.from).toISOString(), new Date(q.to).toISOString()], ['2026-01-01T19:00:00.000Z', '2026-01-02T19:00:00.000Z']);
});

test('local times that do not exist or exist twice resolve to one instant', () => {
  const tz = 'Europe/Berlin';
  assert.equal(new Date(wallToInstant(Date.UTC(2026, 2, 29, 2, 30), tz)).toISOString(), '2026-03-29T01:30:00.000Z', 'a skipped time moves forward by the gap (02:30 → 03:30)');
  assert.equal(new Date(wallToInstant(Date.UTC(2026, 9, 25, 2, 30), tz)).toISOString(), '2026-10-25T00:30:00.000Z', 'a repeated time takes the first');
  assert.equal(new Date(wallToInstant(Date.UTC(2026, 0, 1), 'UTC')).toISOString(), '2026-01-01T00:00:00.000Z');
});

test('dates and date-times are parsed as ISO 8601, in the zone when they carry no offset', () => {
  assert.equal(parseInstant('2026-01-31', 'UTC', false), Date.UTC(2026, 0, 31));
  assert.equal(parseInstant('2026-01-31', 'UTC', true), Date.UTC(2026, 1, 1), 'a date as `to` includes the whole day');
  assert.equal(parseInstant('2026-01-31T10:00:00Z', 'Europe/Berlin', false), Date.UTC(2026, 0, 31, 10));
  assert.equal(parseInstant('2026-01-31T10:00:00+05:30', 'UTC', false), Date.UTC(2026, 0, 31, 4, 30));
  assert.equal(parseInstant('2026-01-31T10:00', 'Europe/Berlin', false), Date.UTC(2026, 0, 31, 9));
  assert.equal(parseInstant('2026-01-31T10:00:00.250Z', 'UTC', false), Date.UTC(2026, 0, 31, 10, 0, 0, 250));
  for (const bad of ['2026-02-30', '2026-13-01', '31/01/2026', 'yesterday', '2026-01-31T25:00:00Z', '2026-01-31T10:00:00+5', '2026-01-31T10:00:00+99:99', '2026-01-31T10:00:00-24:00', '2026-01-31T10:00:00+01:60']) {
    assert.equal(parseInstant(bad, 'UTC', false), undefined, bad);
  }
  assert.equal(isTimeZone('Europe/Berlin'), true);
  assert.equal(isTimeZone('Europe/Atlantis'), false);
});

test('12,000 case variants of one zone name share one cached formatter, and the answer names the canonical zone', () => {
  const zone = 'Pacific/Port_Moresby';
  const before = cachedTimeZones();
  for (let n = 0; n < 12_000; n++) {
    // bit i of n picks the case of letter i: 12,000 distinct spellings
    const variant = [...zone].map((c, i) => ((n >> i) & 1 ? c.toUpperCase() : c.toLowerCase())).join('');
    const scope = resolveQuery({ tz: variant, from: '2026-01-01', to: '2026-01-02' }, caller, Date.UTC(2026, 5, 1));
    assert.equal(scope.tz, zone);
    offsetAt(scope.from, scope.tz);
  }
  assert.ok(cachedTimeZones() <= before + 1, `${cachedTimeZones() - before} formatters added`);
});

test('formatters for many distinct zones stay bounded at 64', () => {
  for (const tz of Intl.supportedValuesOf('timeZone')) offsetAt(0, tz);
  assert.ok(cachedTimeZones() <= 64, `${cachedTimeZones()} formatters cached`);
});

test('bad ranges are 400s naming the parameter', () => {
  const fault = (q: Record<string, string>) => {
    try {
      resolveQuery({ tz: 'UTC', ...q }, caller, Date.UTC(2026, 5, 1));
    } catch (err) {
      assert.ok(err instanceof ApiError);
      return [err.status, err.param];
    }
    return undefined;
  };
  assert.deepEqual(fault({ from: 'soon' }), [400, 'from']);
  assert.deepEqual(fault({ to: '2026-02-31' }), [400, 'to']);
  assert.deepEqual(fault({ tz: 'Nowhere/City' }), [400, 'tz']);
  assert.deepEqual(fault({ from: '2026-03-01', to: '2026-02-01' }), [400, 'from']);
  assert.deepEqual(fault({ from: '2025-01-01', to: '2026-02-06' }), [400, 'from'], 'over 400 days');
  assert.equal(fault({ from: '2025-01-01', to: '2026-02-04' }), undefined, '400 days exactly is fine');
  const defaults = resolveQuery({ tz: 'UTC' }, caller, Date.UTC(2026, 5, 1, 12, 30));
  assert.deepEqual([defaults.from, defaults.to], [Date.UTC(2026, 4, 25, 12), Date.UTC(2026, 5, 1, 13)]);
});

test('a range is read from the coarsest rollup rows that fit inside it', () => {
  const iso = (ms: number) => new Date(ms).toISOString().slice(0, 13);
  const parts = rangeParts(Date.UTC(2026, 0, 30, 22), Date.UTC(2026, 3, 2, 5), ['h', 'd', 'm']);
  assert.deepEqual(parts.map((p) => `${p.grain} ${iso(p.from)}..${iso(p.to)}`), [
    'h 2026-01-30T22..2026-01-31T00',
    'd 2026-01-31T00..2026-02-01T00',
    'm 2026-02-01T00..2026-04-01T00',
    'd 2026-04-01T00..2026-04-02T00',
    'h 2026-04-02T00..2026-04-02T05',
  ]);
  assert.deepEqual(rangeParts(Date.UTC(2026, 0, 5, 3), Date.UTC(2026, 0, 5, 9), ['h', 'd', 'm']).map((p) => p.grain), ['h']);
  assert.deepEqual(rangeParts(Date.UTC(2026, 0, 1), Date.UTC(2027, 0, 1), ['h', 'd']).map((p) => p.grain), ['d']);
});

test('offsets with seconds (local mean time) are written ±hh:mm:ss, not as a fraction of a minute', () => {
  assert.equal(localIso(Date.UTC(1000, 0, 1), 'Europe/Berlin'), '1000-01-01T00:53:28+00:53:28');
  assert.equal(localIso(Date.UTC(1971, 0, 1), 'Africa/Monrovia'), '1970-12-31T23:15:30-00:44:30');
  assert.equal(localIso(Date.UTC(2026, 0, 1), 'Asia/Kolkata'), '2026-01-01T05:30:00+05:30');
});
