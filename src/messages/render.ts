/**
 * Template rendering of subject, html and text with Handlebars. One isolated
 * Handlebars environment (no global helpers or partials), only the built-in
 * block helpers (`if`, `unless`, `each`, `with`, `lookup`), no prototype
 * access at run time. HTML output is escaped; subject and text are not,
 * because they are not HTML. A template that does not compile or fails to run
 * becomes a 422 naming its field.
 */
import Handlebars from 'handlebars';
import { unprocessable } from '../http/errors';

export type TemplateField = 'subject' | 'html' | 'text';

const hb = Handlebars.create();
hb.unregisterHelper('log');
hb.unregisterHelper('helperMissing');
hb.unregisterHelper('blockHelperMissing');

const KNOWN = { if: true, unless: true, each: true, with: true, lookup: true, log: false } as const;
const RUNTIME: Handlebars.RuntimeOptions = {
  allowProtoPropertiesByDefault: false,
  allowProtoMethodsByDefault: false,
  allowCallsToHelperMissing: false,
};

export type Renderer = (data: Record<string, unknown>) => string;

/**
 * Loop work of one render. Nested {{#each}} multiplies: three levels over a
 * 150-item array is 3.4 million iterations, seconds of blocked event loop
 * from a 1 KB request. Rendering is synchronous, so one module-level budget,
 * reset before each render, counts iterations and the characters they make.
 */
const MAX_ITERATIONS = 20_000;
const MAX_LOOP_CHARS = 64 * 1024 * 1024;
const budget = { iterations: 0, chars: 0 };
const builtinEach = hb.helpers.each as Handlebars.HelperDelegate;
hb.registerHelper('each', function (this: unknown, context: unknown, options: Handlebars.HelperOptions) {
  const fn = options.fn;
  const counted = ((ctx: unknown, opts?: Handlebars.RuntimeOptions) => {
    if (++budget.iterations > MAX_ITERATIONS) throw new Error(`{{#each}} may run at most ${MAX_ITERATIONS} times per render`);
    const out = fn(ctx, opts);
    if ((budget.chars += out.length) > MAX_LOOP_CHARS) throw new Error(`{{#each}} may produce at most ${MAX_LOOP_CHARS} characters per render`);
    return out;
  }) as Handlebars.TemplateDelegate;
  return builtinEach.call(this, context, { ...options, fn: counted });
});
const run = (template: Handlebars.TemplateDelegate, data: unknown): string => {
  budget.iterations = 0;
  budget.chars = 0;
  return template(data, RUNTIME);
};

/**
 * Compiling costs milliseconds while rendering costs microseconds, and an
 * application sends the same few templates over and over: keep the compiled
 * ones, least recently used out first, bounded by count and source size.
 */
const CACHE_ENTRIES = 500;
const CACHE_CHARS = 8 * 1024 * 1024;
const cache = new Map<string, Handlebars.TemplateDelegate>();
let cachedChars = 0;

function remember(key: string, template: Handlebars.TemplateDelegate): void {
  if (key.length > CACHE_CHARS / 8) return;
  cache.set(key, template);
  cachedChars += key.length;
  while (cache.size > CACHE_ENTRIES || cachedChars > CACHE_CHARS) {
    const oldest = cache.keys().next().value as string;
    cache.delete(oldest);
    cachedChars -= oldest.length;
  }
}

function compiled(field: TemplateField, source: string): Handlebars.TemplateDelegate {
  const key = `${field}\0${source}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key); // re-insert: most recently used last
    cache.set(key, hit);
    return hit;
  }
  const template = hb.compile(source, { knownHelpers: KNOWN, knownHelpersOnly: true, noEscape: field !== 'html', strict: false });
  // Handlebars compiles lazily: run it once so syntax and helper errors surface now.
  run(template, {});
  remember(key, template);
  return template;
}

/** `param` is the field named in errors (e.g. `html`, or `template_id` for a stored template). */
export function compileField(field: TemplateField, source: string, param: string = field): Renderer {
  // Most subjects and many bodies hold no expressions: skip the compiler for them.
  if (!source.includes('{{')) return () => source;
  let template: Handlebars.TemplateDelegate;
  try {
    template = compiled(field, source);
  } catch (err) {
    throw templateError(field, param, err);
  }
  return (data) => {
    try {
      return run(template, data);
    } catch (err) {
      throw templateError(field, param, err);
    }
  };
}

function templateError(field: TemplateField, param: string, err: unknown) {
  // Parse errors span several lines (source excerpt, caret, expectations): keep the first and last.
  const lines = String((err as Error)?.message ?? err).split('\n').filter(Boolean);
  const detail = (lines.length > 1 ? `${lines[0]} ${lines[lines.length - 1]}` : lines[0] ?? 'invalid template').slice(0, 300);
  return unprocessable('template_error', `${field} template: ${detail}`, param);
}

/** Compiles the three fields; undefined fields stay undefined. */
export function compileAll(
  fields: Partial<Record<TemplateField, string>>,
  param?: (field: TemplateField) => string,
): Partial<Record<TemplateField, Renderer>> {
  const out: Partial<Record<TemplateField, Renderer>> = {};
  for (const field of ['subject', 'html', 'text'] as const) {
    const source = fields[field];
    if (source !== undefined) out[field] = compileField(field, source, param?.(field));
  }
  return out;
}
