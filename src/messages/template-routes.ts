/**
 * Routes of stored templates (extension): create, list, get, delete. Scope
 * messages:send. Creating and deleting change what live mail says, so they
 * need a live key; both modes may read.
 */
import { z } from 'zod';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { notFound } from '../http/errors';
import { pageSchema, paginationQuery, toPage } from '../http/pagination';
import { iso } from '../clock';
import { compilePoolOf, POOL_LIMITS } from './compile-pool';
import { createTemplate, deleteTemplate, getTemplate, listTemplates, Template } from './templates';

const templateSchema = z.object({
  id: z.string().describe('The `tpl_` id to pass as template_id.'),
  name: z.string(),
  subject: z.string(),
  html: z.string().nullable(),
  text: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

const shapeTemplate = (t: Template): z.infer<typeof templateSchema> => ({
  id: t.id,
  name: t.name,
  subject: t.subject,
  html: t.html,
  text: t.text,
  created_at: iso(t.createdAt) as string,
  updated_at: iso(t.updatedAt) as string,
});

const createBody = z.strictObject({
  name: z.string().trim().min(1).max(100).describe('A name unique within the account.'),
  subject: z.string().min(1).max(998).regex(/^[^\r\n]*$/, 'the subject may not contain line breaks').describe('Subject template (Handlebars).'),
  html: z.string().max(1_048_576).optional().describe('HTML body template (Handlebars, values escaped). At most limits.templateSourceBytes bytes and limits.templateNestingDepth levels of blocks.'),
  text: z.string().max(1_048_576).optional().describe('Plain-text body template (Handlebars, not escaped). Same bounds as html.'),
}).refine((b) => b.html || b.text, { message: 'one of html or text is required', path: ['html'] });

const idParam = z.object({ id: z.string().min(1).max(64).describe('The `tpl_` id.') });

export function registerTemplateRoutes(api: ApiRouter, deps: AppDeps): void {
  const { db, clock } = deps;
  const { limits } = deps.config;
  const common = { scope: 'messages:send' as const, tag: 'Templates', extension: true };

  api.add({
    ...common, method: 'post', path: '/v1/templates', summary: 'Store a template', liveOnly: true,
    description: `Needs a live key. Subject, html and text are measured and compiled when stored: a field over ${limits.templateSourceBytes} bytes, `
      + `nested deeper than ${limits.templateNestingDepth} levels, with too many expressions or that does not compile is a 422 naming the field. `
      + `An account may have at most ${limits.templatesPerAccount} templates (409 limit_reached). `
      + `Large templates compile on a worker thread: one that takes over ${POOL_LIMITS.timeoutMs / 1000} s is a 422 template_error; `
      + `an account with ${POOL_LIMITS.maxPerAccount} large templates compiling gets 429 too_many_compiles, and with `
      + `${POOL_LIMITS.maxQueued} waiting in all the next gets 503 compiler_busy (retry after Retry-After).`,
    body: createBody,
    responses: {
      201: { description: 'Created', schema: templateSchema },
      409: { description: 'A template with this name exists (template_exists), or the account has its maximum of templates (limit_reached)' },
      503: { description: 'Too many large templates are compiling (compiler_busy); retry after Retry-After' },
    },
    async handler({ body, caller }) {
      const template = await createTemplate(db, { pool: compilePoolOf(deps), account: caller.accountId }, body, limits, clock.now());
      return { status: 201, body: shapeTemplate(template) };
    },
  });

  api.add({
    ...common, method: 'get', path: '/v1/templates', summary: 'List templates',
    query: z.object(paginationQuery),
    responses: { 200: { description: 'A page of templates, newest first', schema: pageSchema(templateSchema) } },
    async handler({ query, caller }) {
      const page = await listTemplates(db, caller.accountId, query.limit + 1, query.cursor);
      return { status: 200, body: toPage(page.items, query.limit, page.total, (t) => t.id, shapeTemplate) };
    },
  });

  api.add({
    ...common, method: 'get', path: '/v1/templates/{id}', summary: 'Get a template',
    params: idParam,
    responses: { 200: { description: 'The template', schema: templateSchema }, 404: { description: 'No such template' } },
    async handler({ params, caller }) {
      const template = await getTemplate(db, caller.accountId, params.id);
      if (!template) throw notFound('template', 'id');
      return { status: 200, body: shapeTemplate(template) };
    },
  });

  api.add({
    ...common, method: 'delete', path: '/v1/templates/{id}', summary: 'Delete a template', liveOnly: true,
    description: 'Needs a live key. Messages already sent with the template keep their content.',
    params: idParam,
    responses: { 200: { description: 'The deleted template', schema: templateSchema }, 404: { description: 'No such template' } },
    async handler({ params, caller }) {
      const template = await getTemplate(db, caller.accountId, params.id);
      if (!template || !(await deleteTemplate(db, caller.accountId, params.id))) throw notFound('template', 'id');
      return { status: 200, body: shapeTemplate(template) };
    },
  });
}
