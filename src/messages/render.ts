/**
 * Template rendering of subject, html and text with Handlebars, in the
 * isolated environment of handlebars-env.ts, with no prototype access at run
 * time. HTML output is escaped; subject and text are not, because they are
 * not HTML.
 *
 * A source is measured before it is compiled (template-shape.ts); a small
 * one compiles here, a large one in a worker thread (compile-pool.ts) so the
 * main thread is never blocked for long. The compiled form counts its own
 * output as it renders (RenderBudget): a template that does not compile or
 * fails to run is a 422 naming its field, one that renders past the message
 * size limit a 413.
 */
import type Handlebars from 'handlebars';
import { ApiError, unprocessable } from '../http/errors';
import { BoundedCache } from './bounded-cache';
import { CompilePool, CompileTimeout } from './compile-pool';
import { compileHere, fromSpec, hb, OUTPUT, TemplateField } from './handlebars-env';
import { BudgetExceeded, RenderBudget, UNLIMITED_WORK } from './render-budget';
import { checkTemplateSource, TemplateBounds, TemplateShape } from './template-shape';

export type { TemplateField };
export type Renderer = (data: Record<string, unknown>, budget: RenderBudget) => string;
export type RenderLimits = TemplateBounds;

/** Where large sources compile, and the account they are counted against there. */
export interface CompileVia {
  pool: CompilePool;
  account: string;
}

const builtinEach = hb.helpers.each as Handlebars.HelperDelegate;

/** Runs a template with helpers bound to this render's budget. */
function run(template: Handlebars.TemplateDelegate, data: unknown, budget: RenderBudget): string {
  const each = function (this: unknown, context: unknown, options: Handlebars.HelperOptions) {
    const fn = options.fn;
    const turn = ((ctx: unknown, opts?: Handlebars.RuntimeOptions) => {
      budget.iteration();
      return fn(ctx, opts);
    }) as Handlebars.TemplateDelegate;
    return builtinEach.call(this, context, { ...options, fn: turn });
  };
  budget.startField();
  return template(data, {
    allowProtoPropertiesByDefault: false,
    allowProtoMethodsByDefault: false,
    allowCallsToHelperMissing: false,
    helpers: { each, [OUTPUT]: { add: budget.output, steps: budget.steps } as unknown as Handlebars.HelperDelegate },
  });
}

/**
 * Sources at most this large compile on the main thread: a few milliseconds
 * even on a busy machine (about 0.1–0.2 ms per part plus 0.2 ms per KB),
 * less than a trip to a worker thread. Ordinary subjects and short bodies
 * stay here; a source at the bounds (1,000 parts, 512 KiB) would take
 * 200–700 ms and goes to the pool.
 */
export const INLINE_MAX_PARTS = 64;
export const INLINE_MAX_BYTES = 16 * 1024;

/**
 * Compiling costs milliseconds while rendering costs microseconds, and an
 * application sends the same few templates over and over: keep the compiled
 * ones by source, at most 500 entries and 8 M source characters. A source
 * being compiled is compiled once however many sends wait for it.
 */
const bySource = new BoundedCache<Handlebars.TemplateDelegate>(500, 8 * 1024 * 1024);
const compiling = new Map<string, Promise<Handlebars.TemplateDelegate>>();

async function compiled(field: TemplateField, source: string, shape: TemplateShape, via: CompileVia): Promise<Handlebars.TemplateDelegate> {
  const key = `${field}\0${source}`;
  const ready = bySource.get(key) ?? compiling.get(key);
  if (ready) return ready;
  const inline = (shape.parts <= INLINE_MAX_PARTS && source.length <= INLINE_MAX_BYTES) || !via.pool.open;
  if (inline) return remember(key, compileHere(field, source));
  const pending = via.pool.precompile({ field, source }, via.account).then((spec) => remember(key, fromSpec(spec)));
  compiling.set(key, pending);
  try {
    return await pending;
  } finally {
    compiling.delete(key);
  }
}

function remember(key: string, template: Handlebars.TemplateDelegate): Handlebars.TemplateDelegate {
  // Handlebars compiles lazily (and V8 parses function bodies lazily): run it once so errors surface now.
  run(template, {}, new RenderBudget(Number.MAX_SAFE_INTEGER, UNLIMITED_WORK));
  bySource.set(key, template, key.length);
  return template;
}

/** `param` is the field named in errors (e.g. `html`, or `template_id` for a stored template). */
async function compileField(field: TemplateField, source: string, shape: TemplateShape, via: CompileVia, param: string): Promise<Renderer> {
  // Most subjects and many bodies hold no expressions: skip the compiler for them.
  if (!source.includes('{{')) {
    return (_data, budget) => {
      budget.startField();
      return guarded(field, param, () => budget.output(source));
    };
  }
  let template: Handlebars.TemplateDelegate;
  try {
    template = await compiled(field, source, shape, via);
  } catch (err) {
    throw templateError(field, param, err);
  }
  return (data, budget) => guarded(field, param, () => run(template, data, budget));
}

function guarded<T>(field: TemplateField, param: string, work: () => T): T {
  try {
    return work();
  } catch (err) {
    throw templateError(field, param, err);
  }
}

function templateError(field: TemplateField, param: string, err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof CompileTimeout) return unprocessable('template_error', `the ${field} template is too expensive to compile`, param);
  if (err instanceof BudgetExceeded && err.kind === 'output') {
    return new ApiError(413, 'invalid_request_error', 'message_too_large', `the ${field} template ${err.message}`, param);
  }
  // An engine fault (a stack overflow on data nested past validation, say) is ours to log, not the client's to read.
  if (err instanceof RangeError || err instanceof TypeError) {
    return unprocessable('template_error', `${field} template: could not be rendered with this data`, param);
  }
  // Parse errors span several lines (source excerpt, caret, expectations): keep the first and last.
  const lines = String((err as Error)?.message ?? err).split('\n').filter(Boolean);
  const detail = (lines.length > 1 ? `${lines[0]} ${lines[lines.length - 1]}` : lines[0] ?? 'invalid template').slice(0, 300);
  return unprocessable('template_error', `${field} template: ${detail}`, param);
}

export type Renderers = Partial<Record<TemplateField, Renderer>>;

/**
 * Measures every field first (a 422 for any of them before any compiling),
 * then compiles them at once; undefined fields stay undefined. Of several
 * failures, the first field in subject, html, text order is reported.
 */
export async function compileAll(
  fields: Partial<Record<TemplateField, string>>,
  limits: RenderLimits,
  via: CompileVia,
  param: (field: TemplateField) => string = (field) => field,
): Promise<Renderers> {
  const present = (['subject', 'html', 'text'] as const).flatMap((field) => {
    const source = fields[field];
    return source === undefined ? [] : [{ field, source, shape: checkTemplateSource(source, field, param(field), limits) }];
  });
  const results = await Promise.allSettled(present.map((f) => compileField(f.field, f.source, f.shape, via, param(f.field))));
  const out: Renderers = {};
  for (const [i, result] of results.entries()) {
    if (result.status === 'rejected') throw result.reason;
    out[present[i].field] = result.value;
  }
  return out;
}
