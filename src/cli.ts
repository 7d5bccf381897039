#!/usr/bin/env node
/**
 * The `pigeon` command. Every subcommand takes --config FILE (or PIGEON_CONFIG)
 * and works on the same database as a running server (SQLite WAL).
 * Exit codes: 0 ok, 1 failure, 2 invalid configuration or usage.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config';
import { CliContext, UsageError } from './cli/common';
import { accountsCommand, keysCommand } from './cli/keys';
import { serveCommand } from './cli/serve';
import { configCommand } from './cli/config';
import { migrateCommand } from './cli/migrate';
import { doctorCommand } from './cli/doctor';
import { domainsCommand } from './cli/domains';
import { analyticsCommand } from './cli/analytics';
import { settingsCommand } from './cli/settings';
import { poolsCommand } from './cli/pools';
import { usersCommand } from './cli/users';

const COMMANDS: Record<string, { run: (ctx: CliContext) => Promise<void>; help: string }> = {
  serve: { run: serveCommand, help: 'serve                         run the appliance' },
  migrate: { run: migrateCommand, help: 'migrate                       apply database migrations' },
  accounts: { run: accountsCommand, help: 'accounts create NAME          create an account' },
  keys: {
    run: keysCommand,
    help: 'keys create --mode test|live [--scopes a,b|all] [--account NAME] [--name LABEL] [--json]\n  keys list [--account NAME] [--json]\n  keys revoke ID',
  },
  domains: {
    run: domainsCommand,
    help: 'domains add NAME [--account NAME] [--algorithm rsa|ed25519]\n  domains list|show|verify|rotate|delete NAME [--account NAME] [--json]',
  },
  settings: { run: settingsCommand, help: 'settings reset-allowlist [--account NAME]  clear an account\'s IP allowlist (when it locked every key out)' },
  pools: {
    run: poolsCommand,
    help: 'pools list [--json]           source addresses: owner (account or shared), warm-up state, today\'s count\n  pools warmup start|pause|resume|stop (--ips A,B | --all) [--schedule standard|50,100,…] [--json]',
  },
  users: {
    run: usersCommand,
    help: 'users create --email E --role admin|member [--account NAME]  console user; password from stdin if piped, else a one-time link\n  users list [--json]\n  users delete --email E',
  },
  doctor: { run: doctorCommand, help: 'doctor                        check DNS, PTR, ports and TLS, and say what to fix' },
  analytics: { run: analyticsCommand, help: 'analytics rebuild [--account NAME]  recompute analytics rollups from the events' },
  config: { run: configCommand, help: 'config defaults|docs|check|write-docs  print defaults, the settings table, validate, or regenerate the docs' },
};

const USAGE = `usage: pigeon <command> [--config FILE]\n\n${Object.values(COMMANDS).map((c) => '  ' + c.help).join('\n')}\n`;

async function main(argv: string[]): Promise<number> {
  const parsed = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: false,
    options: {
      config: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      mode: { type: 'string' },
      scopes: { type: 'string' },
      account: { type: 'string' },
      name: { type: 'string' },
      algorithm: { type: 'string' },
      ips: { type: 'string' },
      all: { type: 'boolean' },
      schedule: { type: 'string' },
      email: { type: 'string' },
      role: { type: 'string' },
    },
  });
  const [name = 'serve', ...args] = parsed.positionals;
  const command = COMMANDS[name];
  if (parsed.values.help || !command) {
    process.stdout.write(USAGE);
    return command || parsed.values.help ? 0 : 2;
  }
  const configFile = typeof parsed.values.config === 'string' ? parsed.values.config : undefined;
  const config = loadConfig(configFile);
  const out = (line: string) => process.stdout.write(line + '\n');
  await command.run({ config, args, flags: parsed.values as CliContext['flags'], out });
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exit(code);
  },
  (err: unknown) => {
    if (err instanceof ConfigError || err instanceof UsageError) {
      process.stderr.write(`pigeon: ${err.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`pigeon: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
