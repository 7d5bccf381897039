/**
 * Which mailbox provider a destination belongs to, recognised by the host
 * names of its MX records (config/provider-mx.json, plus an optional file of
 * the sysadmin's). Warm-up budgets and throttling are kept per provider
 * because the big providers judge a sending IP across all their domains:
 * gmail.com and every Google Workspace domain share one reputation.
 */
import fs from 'node:fs';
import { z } from 'zod';
import builtIn from '../../config/provider-mx.json';

/** Destinations no provider pattern matches are counted (and throttled) as this. */
export const OTHER = 'other';

const fileSchema = z.object({
  about: z.string().optional(),
  providers: z.array(z.strictObject({
    id: z.string().regex(/^[a-z0-9-]{1,32}$/).refine((id) => id !== OTHER, `"${OTHER}" is reserved`),
    name: z.string().optional(),
    mx: z.array(z.string().min(1)).min(1),
  })),
});

interface Pattern {
  provider: string;
  exact?: string;
  suffix?: string;
}

export type ProviderOf = (mxHosts: readonly string[]) => string | null;

const normalize = (host: string) => host.trim().toLowerCase().replace(/\.$/, '');

function compile(json: unknown, source: string): { ids: string[]; patterns: Pattern[] } {
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    throw new Error(`provider MX file ${source}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  const patterns: Pattern[] = [];
  for (const p of parsed.data.providers) {
    for (const raw of p.mx) {
      const host = normalize(raw);
      patterns.push(host.startsWith('*.') ? { provider: p.id, suffix: host.slice(1) } : { provider: p.id, exact: host });
    }
  }
  return { ids: parsed.data.providers.map((p) => p.id), patterns };
}

const BUILT_IN = compile(builtIn, 'config/provider-mx.json');

export interface ProviderMatcher {
  /** Provider ids known to the matcher, in file order (extra file first). */
  ids: string[];
  of: ProviderOf;
}

/** The matcher for a configuration: the extra file's patterns (read once, at start) before the built-in ones. */
export function createProviderMatcher(extraFile = ''): ProviderMatcher {
  const extra = extraFile ? compile(JSON.parse(fs.readFileSync(extraFile, 'utf8')), extraFile) : { ids: [], patterns: [] };
  const patterns = [...extra.patterns, ...BUILT_IN.patterns];
  const ids = [...new Set([...extra.ids, ...BUILT_IN.ids])];
  const match = (host: string): string | null => {
    for (const p of patterns) {
      if (p.exact === host || (p.suffix && host.endsWith(p.suffix) && host.length > p.suffix.length)) return p.provider;
    }
    return null;
  };
  return {
    ids,
    of(mxHosts) {
      for (const host of mxHosts) {
        const hit = match(normalize(host));
        if (hit) return hit;
      }
      return null;
    },
  };
}
