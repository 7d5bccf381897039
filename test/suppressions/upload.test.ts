import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiClient, createKey, startTestApp, TestApp } from '../support/app';

function form(content: string | Buffer, options: { type?: string; reason?: string; name?: string } = {}): FormData {
  const f = new FormData();
  f.append('file', new Blob([content], { type: options.type ?? 'text/csv' }), options.name ?? 'list.csv');
  if (options.reason !== undefined || !('reason' in options)) f.append('reason', options.reason ?? 'imported');
  return f;
}

const upload = (api: ApiClient, body: FormData) => api.post('/v1/suppressions/upload', body);
const count = async (app: TestApp) => Number((await app.db('suppressions').count({ n: '*' }).first())?.n);

/** The upload changes what live mail does, so it takes a live key (`api` here). */
async function withApp(fn: (app: TestApp, api: ApiClient) => Promise<void>, overrides = {}): Promise<void> {
  const app = await startTestApp(overrides);
  try {
    await fn(app, app.api.withKey(await createKey(app, 'live', ['suppressions:manage'])));
  } finally {
    await app.stop();
  }
}

test('a CSV with a header row: email and reason columns, normalised addresses, duplicates, invalid rows and addresses already listed', () =>
  withApp(async (app, api) => {
    assert.equal((await api.post('/v1/suppressions', { suppressions: [{ email: 'pre@example.com', reason: 'complaint' }] })).status, 200);
    const csv = [
      'Email,Name,Reason',
      'Alice@Example.com,Alice,hard_bounce',
      'bob@example.com,Bob,',
      'not-an-address,X,',
      '',
      'alice@example.com,Alice again,',
      'carol@bücher.example,Carol,complaint',
      '"dave@example.com",Dave,"bounced, twice"',
      'pre@example.com,Pre,',
      'eve@@example.com,Eve,',
    ].join('\r\n');
    const res = await upload(api, form(csv));
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, {
      received: 8, added: 4, already_present: 1, duplicates: 1, invalid_count: 2,
      invalid: [
        { line: 4, value: 'not-an-address', error: 'missing @' },
        { line: 10, value: 'eve@@example.com', error: 'the part before @ is not valid (dots at the ends or doubled, or a second @)' },
      ],
    });
    const stored = Object.fromEntries((await app.db('suppressions').select('email', 'reason')).map((r) => [r.email, r.reason]));
    assert.deepEqual(stored, {
      'pre@example.com': 'complaint',
      'alice@example.com': 'hard_bounce',
      'bob@example.com': 'imported',
      'carol@xn--bcher-kva.example': 'complaint',
      'dave@example.com': 'bounced, twice',
    });
    assert.equal((await api.get('/v1/suppressions/carol@b%C3%BCcher.example')).body.email, 'carol@xn--bcher-kva.example');
  }));

test('a CSV without a header: one address per row in the first column, other columns ignored', () =>
  withApp(async (app, api) => {
    const res = await upload(api, form('a@example.com,whatever\nb@example.com\n\nc@example.com,x,y,z\n', { reason: 'legacy list' }));
    assert.equal(res.status, 200, res.text);
    assert.deepEqual([res.body.received, res.body.added, res.body.invalid_count], [3, 3, 0]);
    const reasons = await app.db('suppressions').distinct('reason');
    assert.deepEqual(reasons, [{ reason: 'legacy list' }]);
  }));

test('files that are not CSV, are empty or have no valid address are refused and nothing is saved', () =>
  withApp(async (app, api) => {
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001', 'hex');
    const cases: Array<[string, FormData, number, string]> = [
      ['binary content', form(png, { type: 'application/octet-stream' }), 422, 'invalid_csv'],
      ['an image type', form('a@example.com\n', { type: 'image/png', name: 'x.png' }), 422, 'invalid_csv'],
      ['an empty file', form(''), 422, 'empty_file'],
      ['only a header', form('email,reason\n'), 422, 'empty_file'],
      ['no valid address', form('email\nfoo\nbar\n'), 422, 'no_valid_addresses'],
      ['a broken quote', form('a@example.com\n"b@example.com\n'), 422, 'invalid_csv'],
    ];
    for (const [what, body, status, code] of cases) {
      const res = await upload(api, body);
      assert.equal(res.status, status, `${what}: ${res.text}`);
      assert.equal(res.body.error.code, code, what);
      assert.equal(res.body.error.param, 'file', what);
    }
    assert.equal(await count(app), 0);
  }));

test('duplicates and listed addresses are told apart across batches of a large file', () =>
  withApp(async (app, api) => {
    await api.post('/v1/suppressions', { suppressions: [{ email: 'user4500@example.com' }, { email: 'user10@example.com' }] });
    const rows = Array.from({ length: 5000 }, (_, i) => `user${i}@example.com`);
    rows.push('USER7@example.com', 'user4999@example.com', 'user10@example.com');
    const res = await upload(api, form(rows.join('\n')));
    assert.equal(res.status, 200, res.text);
    assert.deepEqual([res.body.received, res.body.added, res.body.already_present, res.body.duplicates], [5003, 4998, 3, 2]);
    assert.equal(await count(app), 5000);
  }));

test('the upload is all or nothing: a fault after the first batches were written leaves the list as it was', () =>
  withApp(async (app, api) => {
    const rows = Array.from({ length: 4500 }, (_, i) => `user${i}@example.com`);
    rows.push('"broken@example.com,unclosed');
    const res = await upload(api, form(rows.join('\n')));
    assert.equal(res.status, 422, res.text);
    assert.equal(res.body.error.code, 'invalid_csv');
    assert.match(res.body.error.message, /line 4501/);
    assert.equal(await count(app), 0);
  }));

test('request faults: missing parts, wrong content type, too large, missing scope', () =>
  withApp(async (app, api) => {
    const noFile = new FormData();
    noFile.append('reason', 'x');
    let res = await upload(api, noFile);
    assert.equal(res.status, 422);
    assert.equal(res.body.error.param, 'file');
    const noReason = new FormData();
    noReason.append('file', new Blob(['a@example.com']), 'a.csv');
    res = await upload(api, noReason);
    assert.equal(res.status, 422);
    assert.equal(res.body.error.param, 'reason');
    res = await api.post('/v1/suppressions/upload', { file: 'a@example.com', reason: 'x' });
    assert.equal(res.status, 415);
    res = await upload(api, form('a@example.com\n'.repeat(200)));
    assert.equal(res.status, 413);
    const twoFiles = new FormData();
    twoFiles.append('reason', 'x');
    twoFiles.append('file', new Blob(['a@example.com']), 'a.csv');
    twoFiles.append('file', new Blob(['b@example.com']), 'b.csv');
    res = await upload(api, twoFiles);
    assert.equal(res.status, 422, res.text);
    assert.equal(res.body.error.code, 'too_many_files');
    assert.equal(res.body.error.param, 'file');
    const other = app.api.withKey(await createKey(app, 'live', ['analytics:read']));
    res = await other.post('/v1/suppressions/upload', form('a@example.com\n'));
    assert.equal(res.status, 403);
    assert.equal(await count(app), 0);
  }, { suppressions: { uploadMaxBytes: 1000 } }));
