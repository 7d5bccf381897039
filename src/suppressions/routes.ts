/**
 * Routes of the suppression list (scope suppressions:manage, a Pigeon
 * extension; the upload endpoint is SPEC.md's). The list is per account and
 * shared by both modes, and it decides which live mail leaves: adding or
 * removing an address needs a live key. Reading the list is open to both.
 */
import fs from 'node:fs';
import { z } from 'zod';
import type { Middleware } from 'koa';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { notFound, unprocessable } from '../http/errors';
import { pageSchema, paginationQuery, toPage } from '../http/pagination';
import { iso } from '../clock';
import { checkEmail } from './email';
import { addSuppression, deleteSuppression, getSuppression, listSuppressions, Suppression } from './store';
import { uploadRunner } from './upload-runner';

const reasonSchema = z.string().trim().min(1).max(100).regex(/^[^\x00-\x1f\x7f]*$/, 'reason must be printable text');

const suppressionSchema = z.object({
  id: z.string(),
  email: z.string().describe('Normalised address: lower case, domain in ASCII form.'),
  reason: z.string().describe('hard_bounce, complaint, unsubscribe, manual, or the reason given on upload.'),
  source_message_id: z.string().nullable().describe('The message whose bounce, complaint or unsubscribe added it.'),
  created_at: z.string(),
});

const shape = (s: Suppression): z.infer<typeof suppressionSchema> => ({
  id: s.id, email: s.email, reason: s.reason, source_message_id: s.sourceMessageId, created_at: iso(s.createdAt) as string,
});

/** What formidable leaves in ctx.request.files for one uploaded file. */
interface UploadedFile {
  filepath: string;
  size: number;
  mimetype?: string | null;
  originalFilename?: string | null;
}
const isUploadedFile = (v: unknown): v is UploadedFile => typeof v === 'object' && v !== null && typeof (v as UploadedFile).filepath === 'string';

const fileSchema = z.custom<UploadedFile>(isUploadedFile, { message: 'a CSV file is required in the form field `file`' })
  .meta({ type: 'string', format: 'binary', description: 'The CSV file.' });

/** Media types a browser or client may give a CSV file. */
const CSV_TYPES = /^(text\/(csv|plain|x-csv|comma-separated-values)|application\/(csv|x-csv|vnd\.ms-excel|octet-stream))$/i;

const emailParam = z.object({ email: z.string().min(3).max(320).describe('The address (URL-encoded).') });

const uploadResult = z.object({
  received: z.number().int().describe('Data rows in the file (header and empty lines not counted).'),
  added: z.number().int().describe('Addresses newly added to the list.'),
  already_present: z.number().int().describe('Addresses that were already on the list (left unchanged).'),
  duplicates: z.number().int().describe('Rows repeating an address seen earlier in the same file.'),
  invalid_count: z.number().int().describe('Rows without a valid address.'),
  invalid: z.array(z.object({ line: z.number().int(), value: z.string(), error: z.string() })).describe('The first 100 invalid rows.'),
});

/** Removes the uploaded temporary file whatever happens to the request (validation errors included). */
const removeUploads: Middleware = async (ctx, next) => {
  try {
    await next();
  } finally {
    const files = Object.values((ctx.request as { files?: Record<string, unknown> }).files ?? {}).flat();
    for (const f of files) if (isUploadedFile(f)) fs.rm(f.filepath, { force: true }, () => undefined);
  }
};

export function registerSuppressionRoutes(api: ApiRouter, deps: AppDeps): void {
  const { db, reader, clock, config } = deps;

  api.before('post', '/v1/suppressions/upload', removeUploads);
  api.add({
    method: 'post', path: '/v1/suppressions/upload', scope: 'suppressions:manage', tag: 'Suppressions', liveOnly: true,
    summary: 'Upload a suppression list',
    description: 'CSV, one address per row (first column or a column named `email`), optional header row and per-row ' +
      '`reason` column. Needs a live key (a sandbox key gets 403 `live_key_required`): the list decides what live mail is sent. ' +
      'All or nothing: a file that is not CSV, is empty, or has no valid address changes nothing, nor does an upload ' +
      'the client abandons or a stop interrupts; the addresses become visible at once when the upload finishes. ' +
      'One upload per account at a time: 409 `upload_in_progress` while another runs. ' +
      `Rows are written at most ${config.suppressions.uploadBatchRows} per transaction (suppressions.uploadBatchRows, fewer ` +
      `when a batch takes over 200 ms), so other requests are served during a large upload. Largest file: suppressions.uploadMaxBytes (default ${config.suppressions.uploadMaxBytes} bytes).`,
    bodyType: 'multipart',
    bodyLimitBytes: config.suppressions.uploadMaxBytes,
    body: z.strictObject({ file: fileSchema, reason: reasonSchema.describe('Reason for rows without one of their own.') }),
    responses: {
      200: { description: 'Counts of what the file did', schema: uploadResult },
      409: { description: '`upload_in_progress`: another upload of this account is still running' },
    },
    async handler({ body, caller, ctx }) {
      if (body.file.mimetype && !CSV_TYPES.test(body.file.mimetype)) {
        throw unprocessable('invalid_csv', `the file is ${body.file.mimetype}, not CSV`, 'file');
      }
      const input = { accountId: caller.accountId, filePath: body.file.filepath, reason: body.reason, now: clock.now() };
      const result = await uploadRunner(deps).run(input, (abort) => {
        // 'close' before the answer was written: the client hung up while the file was being imported.
        if (ctx.res.destroyed) abort();
        else ctx.res.once('close', () => ctx.res.writableFinished || abort());
      });
      return { status: 200, body: result };
    },
  });

  api.add({
    method: 'get', path: '/v1/suppressions', scope: 'suppressions:manage', tag: 'Suppressions', extension: true,
    summary: 'List suppressed addresses',
    query: z.object({
      ...paginationQuery,
      reason: z.string().max(100).optional().describe('Only this reason.'),
      email: z.string().max(320).optional().describe('Only addresses starting with this text.'),
    }),
    responses: { 200: { description: 'A page of suppressions, newest first', schema: pageSchema(suppressionSchema) } },
    async handler({ query, caller }) {
      const { items, total } = await listSuppressions(reader, caller.accountId, { reason: query.reason, emailPrefix: query.email }, query.limit + 1, query.cursor);
      return { status: 200, body: toPage(items, query.limit, total, (s) => s.id, shape) };
    },
  });

  api.add({
    method: 'get', path: '/v1/suppressions/{email}', scope: 'suppressions:manage', tag: 'Suppressions', extension: true,
    summary: 'Is this address suppressed?', params: emailParam,
    responses: { 200: { description: 'The suppression', schema: suppressionSchema }, 404: { description: 'Not on the list' } },
    async handler({ params, caller }) {
      const found = await getSuppression(reader, caller.accountId, params.email);
      if (!found) throw notFound('suppression', 'email');
      return { status: 200, body: shape(found) };
    },
  });

  api.add({
    method: 'delete', path: '/v1/suppressions/{email}', scope: 'suppressions:manage', tag: 'Suppressions', extension: true, liveOnly: true,
    summary: 'Remove an address from the list', description: 'Needs a live key (403 live_key_required).', params: emailParam,
    responses: { 200: { description: 'The removed suppression', schema: suppressionSchema }, 404: { description: 'Not on the list' } },
    async handler({ params, caller }) {
      const removed = await deleteSuppression(db, caller.accountId, params.email);
      if (!removed) throw notFound('suppression', 'email');
      return { status: 200, body: shape(removed) };
    },
  });

  api.add({
    method: 'post', path: '/v1/suppressions', scope: 'suppressions:manage', tag: 'Suppressions', extension: true, liveOnly: true,
    summary: 'Add one or a few addresses',
    description: 'All or nothing: one invalid address refuses the whole request (422 naming it). Addresses already on the list are left as they are. ' +
      'Needs a live key (403 live_key_required).',
    body: z.strictObject({
      suppressions: z.array(z.strictObject({
        email: z.string().max(320),
        reason: reasonSchema.optional().describe('Default: the top-level reason.'),
      })).min(1).max(1000),
      reason: reasonSchema.default('manual').describe('Reason for entries without one (default manual).'),
    }),
    responses: {
      200: {
        description: 'The list entries for the given addresses',
        schema: z.object({ added: z.number().int(), already_present: z.number().int(), data: z.array(suppressionSchema) }),
      },
    },
    async handler({ body, caller }) {
      const entries = body.suppressions.map((s, i) => {
        const checked = checkEmail(s.email);
        if (!checked.ok) throw unprocessable('invalid_email', `suppressions[${i}].email: ${checked.error}`, `suppressions[${i}].email`);
        return { email: checked.email, reason: s.reason ?? body.reason };
      });
      const now = clock.now();
      return db.transaction(async (trx) => {
        let added = 0;
        for (const e of entries) if (await addSuppression(trx, { accountId: caller.accountId, ...e }, now)) added++;
        const data: Suppression[] = [];
        for (const email of new Set(entries.map((e) => e.email))) data.push((await getSuppression(trx, caller.accountId, email)) as Suppression);
        return { status: 200, body: { added, already_present: data.length - added, data: data.map(shape) } };
      });
    },
  });
}
