/**
 * Stored templates (a Pigeon extension): subject, html and text kept under an
 * id so a send can say `template_id` instead of carrying them. Templates are
 * account configuration, shared by both modes. They are compiled when saved,
 * so a broken template is refused at creation, not at send time.
 */
import type { Queryable } from '../db';
import { newId } from '../ids';
import { conflict } from '../http/errors';
import { compileAll } from './render';

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

export async function createTemplate(db: Queryable, accountId: string, input: NewTemplate, now: number): Promise<Template> {
  compileAll(input); // throws a 422 naming the field that does not compile
  if (await db('templates').where({ account_id: accountId, name: input.name }).first('id')) {
    throw conflict('template_exists', `a template named '${input.name}' already exists`, 'name');
  }
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
  await db('templates').insert(row);
  return toTemplate(row);
}

export async function getTemplate(db: Queryable, accountId: string, id: string): Promise<Template | undefined> {
  const row = await db<TemplateRow>('templates').where({ account_id: accountId, id }).first();
  return row && toTemplate(row);
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
  return (await db('templates').where({ account_id: accountId, id }).delete()) > 0;
}
