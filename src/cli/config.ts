/** `pigeon config defaults|docs|check`: the documented defaults and the README table come from the schema. */
import { describeConfig, parseConfig } from '../config';
import { CliContext, UsageError } from './common';

export function defaultConfigJson(): string {
  return JSON.stringify(parseConfig({}), null, 2) + '\n';
}

export function configTableMarkdown(): string {
  const rows = describeConfig().map((r) => `| \`${r.key}\` | \`${JSON.stringify(r.default)}\` | ${r.description} |`);
  return ['| Key | Default | Meaning |', '|---|---|---|', ...rows].join('\n') + '\n';
}

export async function configCommand(ctx: CliContext): Promise<void> {
  const [action] = ctx.args;
  if (action === 'defaults') return ctx.out(defaultConfigJson().trimEnd());
  if (action === 'docs') return ctx.out(configTableMarkdown().trimEnd());
  if (action === 'check') return ctx.out('configuration is valid');
  throw new UsageError('usage: pigeon config defaults|docs|check');
}
