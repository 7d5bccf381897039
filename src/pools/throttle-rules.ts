/**
 * Which SMTP replies mean "slow down": rules as data (throttle-rules.json
 * beside this file, plus an optional file of the sysadmin's), not an
 * if-chain. The throttle module turns a match into a cool-down of the IP
 * toward the provider that sent it.
 */
import fs from 'node:fs';
import { z } from 'zod';
import builtIn from './throttle-rules.json';

export type ThrottleReason = 'rate_limited' | 'reputation';

export interface ReplyFacts {
  code: number | null;
  enhancedCode: string | null;
  /** the whole reply text as the server sent it */
  response: string;
}

const ruleSchema = z.strictObject({
  code: z.string().optional(),
  enhanced: z.string().optional(),
  text: z.string().optional(),
  reason: z.enum(['rate_limited', 'reputation', 'ignore']),
  comment: z.string().optional(),
});
const fileSchema = z.object({ about: z.string().optional(), rules: z.array(ruleSchema) });

interface Rule {
  code?: RegExp;
  enhanced?: RegExp;
  text?: RegExp;
  reason: ThrottleReason | 'ignore';
}

function compile(json: unknown, source: string): Rule[] {
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    throw new Error(`throttle rules ${source}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  return parsed.data.rules.map((r) => ({
    code: r.code ? new RegExp(r.code, 'i') : undefined,
    enhanced: r.enhanced ? new RegExp(r.enhanced, 'i') : undefined,
    text: r.text ? new RegExp(r.text, 'i') : undefined,
    reason: r.reason,
  }));
}

const BUILT_IN = compile(builtIn, 'throttle-rules.json');

export type ThrottleMatcher = (reply: ReplyFacts) => ThrottleReason | null;

/** The matcher for a configuration: the extra file's rules (read once, at start) before the built-in ones. */
export function createThrottleMatcher(extraFile = ''): ThrottleMatcher {
  const rules = [...(extraFile ? compile(JSON.parse(fs.readFileSync(extraFile, 'utf8')), extraFile) : []), ...BUILT_IN];
  return (reply) => {
    // A reply with no code is a local failure (refused, timed out): it says nothing about reputation.
    if (reply.code === null || reply.code < 400) return null;
    const code = String(reply.code);
    const enhanced = reply.enhancedCode ?? '';
    const hit = rules.find((r) => (!r.code || r.code.test(code)) && (!r.enhanced || r.enhanced.test(enhanced)) && (!r.text || r.text.test(reply.response)));
    return !hit || hit.reason === 'ignore' ? null : hit.reason;
  };
}
