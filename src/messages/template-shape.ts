/**
 * Template sources are measured before Handlebars sees them. Its parser and
 * compiler cost grows faster than linearly with block nesting (6,000 nested
 * {{#if}} blocked the event loop for 23 s) and costs about 0.1 ms per
 * expression part (a 512 KB source of `{{a}}` took 15 s to compile). This
 * scan is one linear pass over the source: it counts the parts inside
 * `{{ }}` and the deepest nesting of blocks, else-chains and sub-expressions,
 * so a bomb is refused with a 422 before anything superlinear runs.
 */
import { unprocessable } from '../http/errors';

/**
 * Names, values and path segments inside `{{ }}` one template field may hold.
 * A few hundred is a large real template. Compiling costs about 0.1 ms per
 * part (more on a busy machine), so 1,000 keeps one compile well under a
 * second — on a compile worker thread for large sources (render.ts), and
 * paid once per source since compiled templates are cached.
 */
export const MAX_TEMPLATE_PARTS = 1000;

export interface TemplateShape {
  /** Names, literals and path segments inside mustaches (each mustache counts at least one). */
  parts: number;
  /** Deepest nesting: open blocks plus else-chains plus sub-expression parentheses. */
  depth: number;
}

export interface TemplateBounds {
  templateSourceBytes: number;
  templateNestingDepth: number;
}

/** Refuses a source that is too long, too deep or has too many parts (422 naming `param`); else its shape. */
export function checkTemplateSource(source: string, field: string, param: string, limits: TemplateBounds): TemplateShape {
  // Text without `{{` is never compiled (render.ts sends it as it is): only the message size bounds it.
  if (!source.includes('{{')) return { parts: 0, depth: 0 };
  const bytes = Buffer.byteLength(source, 'utf8');
  if (bytes > limits.templateSourceBytes) {
    throw unprocessable('template_too_large', `the ${field} template is ${bytes} bytes; the limit is ${limits.templateSourceBytes}`, param);
  }
  const shape = measureTemplate(source);
  if (shape.depth > limits.templateNestingDepth) {
    throw unprocessable('template_too_deep', `the ${field} template nests blocks or sub-expressions ${shape.depth} deep; the limit is ${limits.templateNestingDepth}`, param);
  }
  if (shape.parts > MAX_TEMPLATE_PARTS) {
    throw unprocessable('template_too_complex', `the ${field} template has ${shape.parts} names and values inside {{ }}; the limit is ${MAX_TEMPLATE_PARTS}`, param);
  }
  return shape;
}

/** One pass: text between mustaches is skipped with indexOf, mustache bodies are read char by char. */
export function measureTemplate(source: string): TemplateShape {
  const unclosed = new Set<string>();
  const blocks: number[] = []; // per open block: the levels it adds (1, plus one per `{{else if …}}`)
  let depth = 0;
  const shape: TemplateShape = { parts: 0, depth: 0 };
  let at = source.indexOf('{{');
  while (at !== -1) {
    if (isEscaped(source, at)) {
      shape.parts++;
      at = source.indexOf('{{', at + 2);
      continue;
    }
    let start = at + 2;
    while (source[start] === '{' || source[start] === '~') start++;
    const body = source[start] === '!' ? skipComment(source, start) : readMustache(source, start, unclosed);
    if (!body) break; // unterminated: the parser reports it
    depth = nestAfter(source, start, depth, blocks);
    shape.parts += Math.max(1, body.parts);
    shape.depth = Math.max(shape.depth, depth + body.parens);
    at = source.indexOf('{{', body.end);
  }
  return shape;
}

/** `\{{` is literal text, `\\{{` is a backslash followed by a real mustache. */
const isEscaped = (s: string, at: number) => s[at - 1] === '\\' && s[at - 2] !== '\\';

/** The nesting after the mustache whose body starts at `i`: `#`/`^` opens, `/` closes, `else x` chains. */
function nestAfter(s: string, i: number, depth: number, blocks: number[]): number {
  const c = s[i];
  if (c === '#' || (c === '^' && !/^\^\s*~?}}/.test(s.slice(i, i + 64)))) {
    blocks.push(1);
    return depth + 1;
  }
  if (c === '/') return Math.max(0, depth - (blocks.pop() ?? 0));
  if (c === 'e' && blocks.length && /^else\s+[^\s~}]/.test(s.slice(i, i + 64))) {
    blocks[blocks.length - 1]++;
    return depth + 1;
  }
  return depth;
}

interface MustacheBody {
  /** Index just past the closing `}}`. */
  end: number;
  parts: number;
  parens: number;
}

/** `{{! … }}` ends at the first `}}`; `{{!-- … --}}` at `--}}` or `--~}}`. */
function skipComment(s: string, i: number): MustacheBody | undefined {
  if (!s.startsWith('!--', i)) {
    const end = s.indexOf('}}', i);
    return end === -1 ? undefined : { end: end + 2, parts: 1, parens: 0 };
  }
  for (let k = s.indexOf('--', i + 3); k !== -1; k = s.indexOf('--', k + 1)) {
    const after = s[k + 2] === '~' ? k + 3 : k + 2;
    if (s.startsWith('}}', after)) return { end: after + 2, parts: 1, parens: 0 };
  }
  return undefined;
}

const SEPARATOR = new Set([' ', '\t', '\r', '\n', '.', '/', '(', ')', '=', '|', '~', '}', '{', '#', '^', '>', '*', '&']);

/** Counts the parts and the deepest parentheses up to the closing `}}`, skipping "strings" and [segments]. */
function readMustache(s: string, i: number, unclosed: Set<string>): MustacheBody | undefined {
  let parts = 0;
  let open = 0;
  let parens = 0;
  let inWord = false;
  for (let k = i; k < s.length; k++) {
    const c = s[k];
    if (c === '}' && s[k + 1] === '}') {
      while (s[k] === '}') k++; // `}}}` of a triple-stash, `}}}}` of a raw block
      return { end: k, parts, parens };
    }
    const end = c === '"' || c === "'" || c === '[' ? closing(s, k, c === '[' ? ']' : c, unclosed) : -1;
    if (end !== -1) { // a literal is one part; unclosed, its quote is read as an ordinary character
      k = end;
      parts++;
      inWord = false;
      continue;
    }
    if (c === '(') parens = Math.max(parens, ++open);
    if (c === ')') open = Math.max(0, open - 1);
    const separator = SEPARATOR.has(c);
    if (!separator && !inWord) parts++;
    inWord = !separator;
  }
  return undefined;
}

/**
 * Index of the quote or `]` closing the literal opened at `k`, as Handlebars'
 * lexer reads it (only a backslash before the closing character escapes it),
 * or -1. `unclosed` remembers the characters with no closer left, so many
 * unclosed `[` cost one pass, not one pass each.
 */
function closing(s: string, k: number, quote: string, unclosed: Set<string>): number {
  if (unclosed.has(quote)) return -1;
  for (let j = k + 1; j < s.length; j++) {
    if (s[j] === '\\' && s[j + 1] === quote) j++;
    else if (s[j] === quote) return j;
  }
  unclosed.add(quote);
  return -1;
}
