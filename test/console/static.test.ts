/**
 * The console's files as the appliance serves them: strict CSP and the other
 * security headers, immutable hashed assets, a revalidated index.html, and
 * nothing outside the built set (no traversal, no source files).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startTestApp, type TestApp } from '../support/app';
import { DEFAULT_CONSOLE_DIR } from '../../src/http/console-static';

describe('console static files', () => {
  let app: TestApp;
  before(async () => { app = await startTestApp(); });
  after(() => app.stop());

  it('serves index.html at / with the CSP, nosniff, same-origin referrers and no-cache', async () => {
    const res = await fetch(`${app.http.url}/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "object-src 'none'"]) {
      assert.ok(csp.includes(directive), `CSP has ${directive}: ${csp}`);
    }
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(res.headers.get('referrer-policy'), 'same-origin');
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    const html = await res.text();
    assert.match(html, /<div id="app"><\/div>/);
    // Every script is an external same-origin file (the CSP would refuse an inline one) and nothing comes from a CDN.
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc="\/assets\/)[^>]*>/);
    assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//);
  });

  it('serves hashed assets as immutable with their type, and 404s unknown ones in the error shape', async () => {
    const html = await (await fetch(`${app.http.url}/`)).text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    const style = /href="(\/assets\/[^"]+\.css)"/.exec(html)?.[1];
    assert.ok(script && style, 'index.html names a script and a stylesheet');
    const js = await fetch(app.http.url + script);
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type') ?? '', /javascript/);
    assert.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.ok(js.headers.get('content-security-policy'));
    const css = await fetch(app.http.url + style);
    assert.match(css.headers.get('content-type') ?? '', /text\/css/);
    const missing = await fetch(`${app.http.url}/assets/nope-123.js`);
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { error: { code: string } }).error.code, 'route_not_found');
  });

  it('serves nothing but the built files: no traversal, no sources, no other methods', async () => {
    for (const p of ['/assets/../../package.json', '/assets/%2e%2e/%2e%2e/package.json', '/assets/..%2f..%2fpackage.json', '/src/main.tsx', '/console/index.html']) {
      const res = await fetch(app.http.url + p);
      assert.equal(res.status, 404, p);
      assert.doesNotMatch(await res.text(), /"name": "pigeon"/);
    }
    const post = await fetch(`${app.http.url}/`, { method: 'POST' });
    assert.equal(post.status, 404);
    const head = await fetch(`${app.http.url}/`, { method: 'HEAD' });
    assert.equal(head.status, 200);
  });

  it('the build has no source maps and no inline code (what the CSP would refuse)', () => {
    const files = fs.readdirSync(path.join(DEFAULT_CONSOLE_DIR, 'assets'));
    assert.ok(files.some((f) => f.endsWith('.js')));
    assert.ok(!files.some((f) => f.endsWith('.map')));
    const index = fs.readFileSync(path.join(DEFAULT_CONSOLE_DIR, 'index.html'), 'utf8');
    assert.doesNotMatch(index, /<style|\sstyle="|\son[a-z]+="/);
  });
});
