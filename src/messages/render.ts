/**
 * Template rendering of subject, html and text with Handlebars. One isolated
 * Handlebars environment (no global helpers, partials or decorators), only
 * the built-in block helpers (`if`, `unless`, `each`, `with`, `lookup`), no
 * prototype access at run time. HTML output is escaped; subject and text are
 * not, because they are not HTML.
 *
 * A source is measured before it is compiled (template-shape.ts), and its
 * compiled form counts its own output as it renders (RenderBudget): a
 * template that does not compile or fails to run is a 422 naming its field,
 * one that renders past the message size limit a 413.
 */
import Handlebars from 'handlebars';
import { ApiError, unprocessable } from '../http/errors';
import { BoundedCache } from './bounded-cache';
import { BudgetExceeded, RenderBudget, UNLIMITED_WORK } from './render-budget';
import { checkTemplateSource, TemplateBounds } from './template-shape';

export type TemplateField = 'subject' | 'html' | 'text';
export type Renderer = (data: Record<string, unknown>, budget: RenderBudget) => string;
export type RenderLimits = TemplateBounds;

const hb = Handlebars.create();
hb.unregisterHelper('log');
hb.unregisterHelper('helperMissing');
hb.unregisterHelper('blockHelperMissing');
hb.unregisterDecorator('inline'); // {{#*inline}} would define partials, and partials can call each other

const KNOWN = { if: true, unless: true, each: true, with: true, lookup: true, log: false } as const;
/**
 * Where compiled code finds the output counter: an entry of the run's helpers,
 * which is the only per-run object every compiled program receives. It is an
 * object, not a function, so Handlebars does not wrap it as a helper, and
 * templates cannot call it (knownHelpersOnly; `{{[pigeon:output]}}` reads data).
 */
const OUTPUT = 'pigeon:output';

/** The internals of Handlebars' JavaScriptCompiler (its documented extension point) that we override. */
interface CompilerInternals {
  popStack(): unknown;
  pushSource(source: unknown): void;
  appendToBuffer(source: unknown): unknown;
  aliasable(name: string): unknown;
  quotedString(text: string): string;
  invokeKnownHelper(paramSize: number, name: string): void;
  append(): void;
  preamble(): void;
  environment: { opcodes: Array<{ opcode: string }> };
  source: { push(source: string): void };
}
const env = hb as unknown as { JavaScriptCompiler: new () => CompilerInternals };
const Base = env.JavaScriptCompiler;
const counted = (value: unknown) => [`helpers[${JSON.stringify(OUTPUT)}].add(`, value, ')'];
/** What a step of work is (render-budget.ts): a path look-up or a helper call, sub-expressions included. */
const STEPS = new Set(['lookupOnContext', 'lookupData', 'lookupBlockParam', 'invokeKnownHelper']);

/**
 * Emits code that passes every piece of output — static text, `{{x}}`,
 * `{{{x}}}`, `{{lookup …}}` — through the budget's counter as it is appended.
 * The result of a block helper other than lookup is not counted again: it is
 * made of pieces its own program already counted.
 */
class CountingCompiler extends Base {
  private blockResult = false;

  /**
   * Each program (the template, and each block's body) starts by charging the
   * steps it is about to run, so a loop turn costs what its body does.
   */
  override preamble(): void {
    super.preamble();
    const steps = this.environment.opcodes.filter((op) => STEPS.has(op.opcode)).length;
    if (steps) this.source.push(`helpers[${JSON.stringify(OUTPUT)}].steps(${steps});`);
  }

  override invokeKnownHelper(paramSize: number, name: string): void {
    super.invokeKnownHelper(paramSize, name);
    this.blockResult = name !== 'lookup';
  }

  override append(): void {
    const blockResult = this.blockResult;
    this.blockResult = false;
    if (blockResult) return super.append();
    this.pushSource(this.appendToBuffer(counted(this.popStack())));
  }

  appendEscaped(): void {
    this.blockResult = false;
    this.pushSource(this.appendToBuffer(counted([this.aliasable('container.escapeExpression'), '(', this.popStack(), ')'])));
  }

  appendContent(content: string): void {
    this.pushSource(this.appendToBuffer(counted(this.quotedString(content))));
  }

  invokePartial(): never {
    throw new hb.Exception('partials are not supported');
  }

  registerDecorator(): never {
    throw new hb.Exception('decorators are not supported');
  }
}
(CountingCompiler.prototype as unknown as { compiler: unknown }).compiler = CountingCompiler; // for nested programs
env.JavaScriptCompiler = CountingCompiler;

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
 * Compiling costs milliseconds while rendering costs microseconds, and an
 * application sends the same few templates over and over: keep the compiled
 * ones by source, at most 500 entries and 8 M source characters.
 */
const bySource = new BoundedCache<Handlebars.TemplateDelegate>(500, 8 * 1024 * 1024);

function compiled(field: TemplateField, source: string): Handlebars.TemplateDelegate {
  const key = `${field}\0${source}`;
  const hit = bySource.get(key);
  if (hit) return hit;
  const template = hb.compile(source, { knownHelpers: KNOWN, knownHelpersOnly: true, noEscape: field !== 'html', strict: false });
  // Handlebars compiles lazily: run it once so syntax and helper errors surface now.
  run(template, {}, new RenderBudget(Number.MAX_SAFE_INTEGER, UNLIMITED_WORK));
  bySource.set(key, template, key.length);
  return template;
}

/** `param` is the field named in errors (e.g. `html`, or `template_id` for a stored template). */
export function compileField(field: TemplateField, source: string, limits: RenderLimits, param: string = field): Renderer {
  checkTemplateSource(source, field, param, limits);
  // Most subjects and many bodies hold no expressions: skip the compiler for them.
  if (!source.includes('{{')) {
    return (_data, budget) => {
      budget.startField();
      return guarded(field, param, () => budget.output(source));
    };
  }
  const template = guarded(field, param, () => compiled(field, source));
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

/** Compiles the three fields; undefined fields stay undefined. */
export function compileAll(
  fields: Partial<Record<TemplateField, string>>,
  limits: RenderLimits,
  param?: (field: TemplateField) => string,
): Renderers {
  const out: Renderers = {};
  for (const field of ['subject', 'html', 'text'] as const) {
    const source = fields[field];
    if (source !== undefined) out[field] = compileField(field, source, limits, param?.(field));
  }
  return out;
}
