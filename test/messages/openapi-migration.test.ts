import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { migrateLatest, openDatabase } from '../../src/db';
import { startTestApp } from '../support/app';

type Schema = { properties?: Record<string, Schema & { description?: string }>; items?: Schema; anyOf?: Schema[]; description?: string };

test('the OpenAPI document describes every send field, the message record and the list filters', async () => {
  const app = await startTestApp();
  try {
    const doc = (await app.api.get('/v1/openapi.json')).body;
    const send = doc.paths['/v1/messages/send'].post;
    assert.equal(send['x-required-scope'], 'messages:send');
    const body: Schema = send.requestBody.content['application/json'].schema;
    const fields = ['from', 'to', 'cc', 'bcc', 'reply_to', 'subject', 'html', 'text', 'template_id', 'template_data', 'headers', 'attachments',
      'tags', 'metadata', 'ip_pool', 'send_at', 'track_opens', 'track_clicks', 'list_unsubscribe'];
    assert.deepEqual(Object.keys(body.properties ?? {}).sort(), [...fields].sort());
    for (const f of fields) assert.ok(body.properties?.[f].description, `${f} has a description`);
    const toItem = body.properties?.to.items?.anyOf?.find((s) => s.properties);
    assert.ok(toItem?.properties?.substitutions?.description);
    assert.deepEqual(Object.keys(body.properties?.attachments.items?.properties ?? {}).sort(), ['content', 'content_id', 'content_type', 'filename']);
    assert.ok(send.responses['202'].content['application/json'].schema);

    const get = doc.paths['/v1/messages/{id}'].get.responses['200'].content['application/json'].schema as Schema;
    for (const f of ['id', 'status', 'mode', 'from', 'to', 'cc', 'subject', 'tags', 'metadata', 'ip_pool', 'created_at', 'send_at', 'sent_at', 'delivered_at', 'attempts', 'events']) {
      assert.ok(get.properties?.[f], `message record has ${f}`);
    }
    const list = doc.paths['/v1/messages'].get;
    assert.deepEqual(list.parameters.map((p: { name: string }) => p.name).sort(), ['created_after', 'created_before', 'cursor', 'from', 'limit', 'q', 'status', 'tag', 'to']);
    assert.equal(doc.paths['/v1/messages/{id}'].delete['x-required-scope'], 'messages:send');
    assert.equal(doc.paths['/v1/templates'].post['x-pigeon-extension'], true);
    assert.ok(doc.paths['/v1/templates/{id}'].delete);
  } finally {
    await app.stop();
  }
});

test('the templates migration rolls back and forward cleanly', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-mig-'));
  const db = openDatabase(parseConfig({ dataDir: dir }));
  try {
    await migrateLatest(db);
    assert.ok(await db.schema.hasTable('templates'));
    await db.migrate.down({ name: '20261121010001_templates.js' });
    assert.equal(await db.schema.hasTable('templates'), false);
    assert.ok(await db.schema.hasTable('messages'), 'core tables untouched');
    await migrateLatest(db);
    assert.ok(await db.schema.hasTable('templates'));
  } finally {
    await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
