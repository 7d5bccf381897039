// docs/security.md lists the routes a sandbox key may not call. The list is a promise to operators, so it must be
// exactly the routes the code declares live-only, and every one of them must really refuse a sandbox key.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startTestApp, type TestApp } from '../support/app';

const DOC = path.resolve(__dirname, '..', '..', '..', 'docs', 'security.md');

/** `METHOD /path` of each row between the live-only markers of docs/security.md. */
function documentedLiveOnly(): string[] {
  const text = fs.readFileSync(DOC, 'utf8');
  const table = text.slice(text.indexOf('<!-- live-only:begin -->'), text.indexOf('<!-- live-only:end -->'));
  return [...table.matchAll(/^\| `(GET|POST|PUT|PATCH|DELETE) (\/[^`]+)` \|/gm)].map((m) => `${m[1]} ${m[2]}`).sort();
}

describe('docs/security.md', () => {
  let app: TestApp;
  let declared: Array<{ method: string; path: string }>;

  before(async () => {
    app = await startTestApp();
    const doc = (await app.api.get('/v1/openapi.json')).body as { paths: Record<string, Record<string, Record<string, unknown>>> };
    declared = Object.entries(doc.paths).flatMap(([p, ops]) =>
      Object.entries(ops).filter(([, op]) => op['x-pigeon-live-key-required']).map(([m]) => ({ method: m.toUpperCase(), path: p })));
  });
  after(() => app.stop());

  it('lists exactly the routes the code declares live-only', () => {
    assert.ok(declared.length >= 10, 'live-only routes are declared');
    assert.deepEqual(documentedLiveOnly(), declared.map((r) => `${r.method} ${r.path}`).sort());
  });

  it('every live-only route refuses the sandbox key with 403 live_key_required, before reading its body', async () => {
    for (const route of declared) {
      const url = route.path.replace(/\{[^}]+\}/g, 'x');
      const res = await app.api.request(route.method, url, route.method === 'GET' || route.method === 'DELETE' ? undefined : {});
      assert.equal(res.status, 403, `${route.method} ${route.path}: ${res.text}`);
      assert.equal(res.body.error.code, 'live_key_required', `${route.method} ${route.path}`);
    }
  });
});
