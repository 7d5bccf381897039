/**
 * Stored templates (a Pigeon extension): subject, html and text kept under an
 * id so a send can say `template_id` instead of carrying them. Templates are
 * account configuration, shared by both modes. They are compiled when saved,
 * so a broken template is refused at creation, not at send time, and their
 * compiled form is kept for the sends that use them.
 */
import type { Queryable } from '../db';
import { newId } from '../ids';
import { conflict } from '../http/errors';
import { BoundedCache } from './bounded-cache';
import { compileAll, CompileVia, RenderLimits, Renderers } from './render';

export interface TemplateLimits extends RenderLimits {
  templatesPerAccount: number;
}

export interface Template {
  id: string;
  accountId: string;
  name: string;
  subject: string;
  html: string | null;
  text: string | null;
  createdAt: number;
  updatedAt: number;
}

interface TemplateRow {
  id: string;
  account_id: string;
  name: string;
  subject: string;
  html: string | null;
  text: string | null;
  created_at: number;
  updated_at: number;
}

const toTemplate = (r: TemplateRow): Template => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  subject: r.subject,
  html: r.html,
  text: r.text,
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

export interface NewTemplate {
  name: string;
  subject: string;
  html?: string;
  text?: string;
}

export async function createTemplate(db: Queryable, via: CompileVia, input: NewTemplate, limits: TemplateLimits, now: number): Promise<Template> {
  const accountId = via.account;
  await compileAll(input, limits, via); // throws a 422 naming the field that is too large, too deep or does not compile
  const row: TemplateRow = {
    id: newId('tpl'),
    account_id: accountId,
    name: input.name,
    subject: input.subject,
    html: input.html ?? null,
    text: input.text ?? null,
    created_at: now,
    updated_at: now,
  };
  // One transaction (and SQLite's one writer): two creates at once cannot both take the last place.
  await db.transaction(async (trx) => {
    await checkRoomFor(trx, accountId, input.name, limits.templatesPerAccount);
    await trx('templates').insert(row);
  });
  return toTemplate(row);
}

async function checkRoomFor(db: Queryable, accountId: string, name: string, cap: number): Promise<void> {
  if (await db('templates').where({ account_id: accountId, name }).first('id')) {
    throw conflict('template_exists', `a template named '${name}' already exists`, 'name');
  }
  const count = await db('templates').where({ account_id: accountId }).count({ n: '*' }).first();
  if (Number(count?.n ?? 0) >= cap) {
    throw conflict('limit_reached', `an account may have at most ${cap} templates; delete one first`);
  }
}

export async function getTemplate(db: Queryable, accountId: string, id: string): Promise<Template | undefined> {
  const row = await db<TemplateRow>('templates').where({ account_id: accountId, id }).first();
  return row && toTemplate(row);
}

/** The id of the account's template with this name (names are unique per account); providers call it an alias. */
export async function templateIdByName(db: Queryable, accountId: string, name: string): Promise<string | undefined> {
  const row = await db('templates').where({ account_id: accountId, name }).first('id');
  return row?.id as string | undefined;
}

export async function listTemplates(db: Queryable, accountId: string, limit: number, cursor?: string): Promise<{ items: Template[]; total: number }> {
  const rows = await db<TemplateRow>('templates').where({ account_id: accountId })
    .modify((q) => {
      if (cursor) q.where('id', '<', cursor);
    })
    .orderBy('id', 'desc').limit(limit);
  const total = await db('templates').where({ account_id: accountId }).count({ n: '*' }).first();
  return { items: rows.map(toTemplate), total: Number(total?.n ?? 0) };
}

export async function deleteTemplate(db: Queryable, accountId: string, id: string): Promise<boolean> {
  compiledStored.delete(id);
  return (await db('templates').where({ account_id: accountId, id }).delete()) > 0;
}

/**
 * Compiled stored templates by id, at most 200 entries and 16 M source
 * characters. An entry holds the updated_at it was compiled from, so a
 * changed template is compiled afresh; a deleted one is dropped.
 */
const compiledStored = new BoundedCache<{ updatedAt: number; renderers: Renderers }>(200, 16 * 1024 * 1024);

/** The renderers of a stored template; errors name `template_id`. */
export async function storedRenderers(template: Template, limits: RenderLimits, via: CompileVia): Promise<Renderers> {
  const hit = compiledStored.get(template.id);
  if (hit && hit.updatedAt === template.updatedAt) return hit.renderers;
  const fields = { subject: template.subject, html: template.html ?? undefined, text: template.text ?? undefined };
  const renderers = await compileAll(fields, limits, via, () => 'template_id');
  const weight = template.subject.length + (template.html?.length ?? 0) + (template.text?.length ?? 0);
  compiledStored.set(template.id, { updatedAt: template.updatedAt, renderers }, weight);
  return renderers;
}
