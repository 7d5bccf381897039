/**
 * Classify step of the pipeline: turns an SMTP reply into what happens to the
 * message. 2xx is delivered, 4xx deferred; a 5xx is a bounce whose type (hard:
 * the address is bad, soft: this message failed) and category come from the
 * rules file beside this code (`bounce-rules.json`), not from an if-chain, so a
 * sysadmin can extend it (`delivery.bounceRulesFile`).
 */
import fs from 'node:fs';
import { z } from 'zod';
import builtIn from './bounce-rules.json';

export type BounceType = 'hard' | 'soft';
export type BounceCategory = 'invalid_recipient' | 'mailbox_full' | 'spam_block' | 'policy' | 'dns' | 'expired' | 'other';

export interface Reply {
  code: number | null;
  enhancedCode: string | null;
  /** the whole reply as the server sent it (first line's code included) */
  response: string;
}

export interface BounceClass {
  type: BounceType;
  category: BounceCategory;
  suppress: boolean;
}

const ruleSchema = z.strictObject({
  code: z.string().optional(),
  enhanced: z.string().optional(),
  text: z.string().optional(),
  type: z.enum(['hard', 'soft']),
  category: z.enum(['invalid_recipient', 'mailbox_full', 'spam_block', 'policy', 'dns', 'other']),
  suppress: z.boolean().optional(),
  comment: z.string().optional(),
});
const fileSchema = z.object({ rules: z.array(ruleSchema) });

interface Rule {
  code?: RegExp;
  enhanced?: RegExp;
  text?: RegExp;
  result: BounceClass;
}

function compile(json: unknown, source: string): Rule[] {
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) throw new Error(`bounce rules ${source}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data.rules.map((r) => ({
    code: r.code ? new RegExp(r.code, 'i') : undefined,
    enhanced: r.enhanced ? new RegExp(r.enhanced, 'i') : undefined,
    text: r.text ? new RegExp(r.text, 'i') : undefined,
    result: { type: r.type, category: r.category, suppress: r.suppress ?? r.type === 'hard' },
  }));
}

const BUILT_IN = compile(builtIn, 'bounce-rules.json');
const FALLBACK: BounceClass = { type: 'hard', category: 'other', suppress: true };

/** The classifier for a configuration: extra rules from a file (checked at start), then the built-in ones. */
export function createClassifier(rulesFile: string): (reply: Reply) => BounceClass {
  const extra = rulesFile ? compile(JSON.parse(fs.readFileSync(rulesFile, 'utf8')), rulesFile) : [];
  const rules = [...extra, ...BUILT_IN];
  return (reply) => {
    const code = String(reply.code ?? '');
    const enhanced = reply.enhancedCode ?? '';
    const text = replyText(reply.response);
    const hit = rules.find(
      (r) => (!r.code || r.code.test(code)) && (!r.enhanced || r.enhanced.test(enhanced)) && (!r.text || r.text.test(text)),
    );
    return hit?.result ?? FALLBACK;
  };
}

/** Splits "550-5.1.1 first line\n550 5.1.1 second" into its code, enhanced code and text. */
export function parseReply(response: string | undefined | null): Reply {
  const text = (response ?? '').trim();
  const match = /^([245]\d\d)[ -]?(?:([245]\.\d{1,3}\.\d{1,3})\b)?/.exec(text);
  return { code: match ? Number(match[1]) : null, enhancedCode: match?.[2] ?? null, response: text };
}

/** The reply without its codes, lines joined: what the rules' text patterns see. */
function replyText(response: string): string {
  return response
    .split(/\r?\n/)
    .map((line) => line.replace(/^[245]\d\d[ -]?/, '').replace(/^[245]\.\d{1,3}\.\d{1,3}\s*/, ''))
    .join(' ');
}
