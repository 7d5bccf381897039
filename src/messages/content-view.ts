/**
 * A stored message as a person reads it: subject, HTML, text and header
 * fields, parsed from the bytes that went out (or will) with mailparser.
 * Bounded: the stored MIME is at most limits.maxMessageBytes, and each body
 * shown is cut at CONTENT_MAX_CHARS and the header list at HEADERS_MAX fields.
 * Attachments are not returned, only named.
 */
import { simpleParser } from 'mailparser';
import type { Queryable } from '../db';

export const CONTENT_MAX_CHARS = 1024 * 1024;
export const HEADERS_MAX = 200;
const HEADER_VALUE_MAX = 8192;

export interface ContentView {
  subject: string | null;
  html: string | null;
  text: string | null;
  headers: Array<{ name: string; value: string }>;
  attachments: Array<{ filename: string | null; content_type: string; size: number }>;
  truncated: boolean;
}

export async function contentOf(db: Queryable, messageId: string): Promise<ContentView | undefined> {
  const row = await db('messages').join('message_contents', 'message_contents.id', 'messages.content_id')
    .where('messages.id', messageId).first('message_contents.raw as raw');
  if (!row) return undefined;
  const parsed = await simpleParser(Buffer.from(row.raw), { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true });
  const html = typeof parsed.html === 'string' ? parsed.html : null;
  const text = parsed.text ?? null;
  const truncated = (html?.length ?? 0) > CONTENT_MAX_CHARS || (text?.length ?? 0) > CONTENT_MAX_CHARS || parsed.headerLines.length > HEADERS_MAX;
  return {
    subject: parsed.subject ?? null,
    html: html && html.slice(0, CONTENT_MAX_CHARS),
    text: text && text.slice(0, CONTENT_MAX_CHARS),
    headers: parsed.headerLines.slice(0, HEADERS_MAX).map(({ line }) => headerField(line)),
    attachments: parsed.attachments.slice(0, HEADERS_MAX).map((a) => ({ filename: a.filename ?? null, content_type: a.contentType, size: a.size })),
    truncated,
  };
}

/** "Name: folded\r\n value" → {name, value} with the folding undone. */
function headerField(line: string): { name: string; value: string } {
  const colon = line.indexOf(':');
  const name = colon < 0 ? line : line.slice(0, colon);
  const value = colon < 0 ? '' : line.slice(colon + 1).replace(/\r?\n[ \t]+/g, ' ').trim();
  return { name: name.trim(), value: value.slice(0, HEADER_VALUE_MAX) };
}
