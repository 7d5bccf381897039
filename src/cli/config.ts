/** `pigeon config defaults|docs|check|write-docs`: the documented defaults and the README table come from the schema. */
import { CliContext, UsageError } from './common';
import { configTableMarkdown, defaultConfigJson, writeConfigDocs } from './gen-docs';

export async function configCommand(ctx: CliContext): Promise<void> {
  const [action] = ctx.args;
  if (action === 'defaults') return ctx.out(defaultConfigJson().trimEnd());
  if (action === 'docs') return ctx.out(configTableMarkdown().trimEnd());
  if (action === 'check') return ctx.out('configuration is valid');
  if (action === 'write-docs') return ctx.out(`wrote ${writeConfigDocs().join(', ')}`);
  throw new UsageError('usage: pigeon config defaults|docs|check|write-docs');
}
