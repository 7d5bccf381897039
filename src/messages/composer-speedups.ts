/**
 * Three of nodemailer's pure helpers replaced by equivalents that do less work per message (nodemailer is
 * pinned to an exact version; test/messages/composer-speedups.test.ts holds each to the original's answers):
 *
 * - `mimeFuncs.isPlainText` (may a text go 7bit?) scans every letter with a regex for a control character or
 *   one beyond ASCII: ~9 µs for 5 KB. Node's UTF-8 length of the string equals its length only when every
 *   letter is ASCII (~1 µs), and then only the control characters are left to look for (~4 µs).
 *
 * - `mimeFuncs.hasLongerLines` (is a text part 7bit-safe?) builds a new `^.{77,}` regex for every text part
 *   and scans it with backtracking: ~25 µs for 5 KB. The same answer from a scan that only looks closer at
 *   the rare line over the limit: ~2 µs.
 * - `MimeNode#_normalizeHeaderKey` runs three regex replaces each time a header is set, read or written,
 *   about 30 times per message for the same dozen keys. Its answer depends on the key alone, so it is
 *   remembered (for a bounded number of keys: header names come from requests).
 *
 * Installed once, when the MIME builder loads; the output bytes do not change.
 */
import mimeFuncs from 'nodemailer/lib/mime-funcs';
import MimeNode from 'nodemailer/lib/mime-node';

/** Line terminators for `.` and multiline `^` in a JavaScript regex: the line breaks the original counts by. */
const LF = 0x0a;
const CR = 0x0d;
const LS = 0x2028;
const PS = 0x2029;
/** The original's shortcut: it does not test longer strings and says they have long lines. */
const UNTESTED_LENGTH = 128 * 1024;

function hasRunLongerThan(str: string, from: number, to: number, lineLength: number): boolean {
  let run = 0;
  for (let i = from; i < to; i++) {
    const c = str.charCodeAt(i);
    if (c === CR || c === LS || c === PS) run = 0;
    else if (++run > lineLength) return true;
  }
  return false;
}

/** True when some line holds more than `lineLength` UTF-16 units, exactly as `/^.{lineLength+1,}/m.test(str)`. */
export function hasLongerLines(str: string, lineLength: number): boolean {
  if (str.length > UNTESTED_LENGTH) return true;
  for (let start = 0; start < str.length; ) {
    let end = str.indexOf('\n', start);
    if (end < 0) end = str.length;
    // A stretch between two LFs no longer than the limit cannot hold a longer line; a longer one may still be
    // cut by CR, U+2028 or U+2029, which `.` does not match either.
    if (end - start > lineLength && hasRunLongerThan(str, start, end, lineLength)) return true;
    start = end + 1;
  }
  return false;
}

/** Header keys remembered at most (the built-in ones are about a dozen; the rest come from requests). */
const MAX_REMEMBERED_KEYS = 512;

type NormalizeKey = (this: unknown, key: unknown) => string;
interface MimeNodeInternals {
  _normalizeHeaderKey: NormalizeKey;
}

const nodeProto = MimeNode.prototype as unknown as MimeNodeInternals;
/** nodemailer's own implementations, for the equivalence tests. */
export const originals = {
  hasLongerLines: mimeFuncs.hasLongerLines.bind(mimeFuncs) as (str: string, lineLength: number) => boolean,
  isPlainText: mimeFuncs.isPlainText.bind(mimeFuncs) as (value: unknown, isParam?: boolean) => boolean,
  normalizeHeaderKey: nodeProto._normalizeHeaderKey,
};

export function rememberingNormalizer(normalize: NormalizeKey, max = MAX_REMEMBERED_KEYS): NormalizeKey {
  const known = new Map<string, string>();
  return function normalizeHeaderKey(this: unknown, key: unknown): string {
    if (typeof key !== 'string') return normalize.call(this, key);
    let normalized = known.get(key);
    if (normalized === undefined) {
      normalized = normalize.call(this, key);
      // Full: start over, so header names a tenant made up cannot keep the common ones out for good.
      if (known.size >= max) known.clear();
      known.set(key, normalized);
    }
    return normalized;
  };
}

const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f]/;
/** A parameter value (isParam) may not hold a double quote either. */
const CONTROL_OR_QUOTE = /[\x00-\x08\x0b\x0c\x0e-\x1f"]/;

/** True when `value` is a string of printable ASCII, tab and line breaks only (and no `"` when `isParam`), as the original. */
export function isPlainText(value: unknown, isParam?: boolean): boolean {
  if (typeof value !== 'string') return false;
  // each letter one UTF-8 byte: none beyond U+007F (a surrogate pair or a lone surrogate counts more bytes too)
  if (Buffer.byteLength(value) !== value.length) return false;
  return !(isParam ? CONTROL_OR_QUOTE : CONTROL).test(value);
}

let installed = false;

export function installComposerSpeedups(): void {
  if (installed) return;
  installed = true;
  (mimeFuncs as { hasLongerLines: typeof hasLongerLines }).hasLongerLines = hasLongerLines;
  (mimeFuncs as { isPlainText: typeof isPlainText }).isPlainText = isPlainText;
  nodeProto._normalizeHeaderKey = rememberingNormalizer(originals.normalizeHeaderKey);
}
