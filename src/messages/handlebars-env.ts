/**
 * The one Handlebars environment templates compile in, shared by the main
 * thread (render.ts) and the compile worker (compile-worker.ts), so both make
 * exactly the same code. It is isolated (no global helpers, partials or
 * decorators), knows only the built-in block helpers (`if`, `unless`,
 * `each`, `with`, `lookup`), and its compiler routes every piece of output
 * through a counter the render passes in (see render-budget.ts).
 *
 * This module imports nothing but handlebars: the worker loads it alone.
 */
import Handlebars from 'handlebars';

export type TemplateField = 'subject' | 'html' | 'text';

export const hb = Handlebars.create();
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
export const OUTPUT = 'pigeon:output';

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

const compileOptions = (field: TemplateField) =>
  ({ knownHelpers: KNOWN, knownHelpersOnly: true, noEscape: field !== 'html', strict: false }) as const;

/** Lexes, parses and compiles on this thread; the result compiles lazily on its first run. */
export function compileHere(field: TemplateField, source: string): Handlebars.TemplateDelegate {
  return hb.compile(source, compileOptions(field));
}

/** The costly part, for the worker: the compiled template as JavaScript source (a template spec). */
export function precompile(field: TemplateField, source: string): string {
  return hb.precompile(source, compileOptions(field)) as unknown as string;
}

/**
 * Turns a spec from precompile() back into a template. V8 parses the spec's
 * JavaScript an order of magnitude faster than Handlebars made it. The spec
 * comes from our own compiler in our own worker, never from a client, which
 * is what hb.compile does with the same code internally.
 */
export function fromSpec(spec: string): Handlebars.TemplateDelegate {
  return hb.template(new Function(`return ${spec};`)() as ReturnType<typeof hb.precompile>);
}
