// Runs every compiled test file with node's built-in runner.
// Node 20 has no glob support in `node --test`, so the files are listed here.
//
// `node test/run.mjs [filter]`: the files (matching filter) on SQLite, then, without a filter, the
// database-facing suites again on PostgreSQL (PG_SUITES), on one throwaway server for the whole pass
// (test/support/postgres.ts). `PIGEON_TEST_DATABASE=postgres node test/run.mjs [filter]`: only the
// PostgreSQL pass (of the files matching filter). test/postgres/ runs in the PostgreSQL pass only.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const root = new URL('../dist/test', import.meta.url).pathname;
const filter = process.argv[2];
const PG_SUITES = ['/messages/', '/delivery/', '/webhooks/', '/pools/', '/analytics/', '/suppressions/', '/postgres/'];
// Left out of the PostgreSQL pass, each for a reason (docs/postgres.md):
const PG_SKIP = [
  // Its bound counts result transactions, and how many results share one depends on how long the previous commit
  // took: PostgreSQL commits faster here, so the same statements (7 claims, 7 loads, 4 per result transaction)
  // come to 100-115 instead of SQLite's 70-80. The shape is the same on both; the SQLite pass checks it.
  '/webhooks/statements.test.js',
];

function list(keep) {
  const files = [];
  (function walk(dir) {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.test.js') && keep(path)) files.push(path);
    }
  })(root);
  return files;
}

function run(files, env) {
  if (!files.length) return 0;
  const result = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...files], { stdio: 'inherit', env });
  return result.status ?? 1;
}

async function postgresPass(files) {
  if (!files.length) return 0;
  const { startPostgresServer, postgresBin } = createRequire(import.meta.url)(join(root, 'support', 'postgres.js'));
  if (!postgresBin()) {
    // As the browser tests without Chromium: a machine without PostgreSQL runs the SQLite pass only (.ci/run installs it).
    console.log('# PostgreSQL pass skipped: PostgreSQL is not installed (apt-get install -y postgresql; .ci/run does it)');
    return 0;
  }
  const server = await startPostgresServer();
  try {
    console.log(`# PostgreSQL pass: ${files.length} files on ${server.adminUrl}`);
    return run(files, { ...process.env, PIGEON_TEST_DATABASE: 'postgres', PIGEON_TEST_POSTGRES_URL: server.adminUrl });
  } finally {
    server.stop();
  }
}

const matches = (path) => !filter || path.includes(filter);
const onPostgres = (path) => PG_SUITES.some((s) => path.includes(s)) && !PG_SKIP.some((s) => path.endsWith(s));
let status;
if (process.env.PIGEON_TEST_DATABASE === 'postgres') {
  status = await postgresPass(list((p) => matches(p) && (filter || onPostgres(p))));
} else {
  status = run(list((p) => matches(p) && !p.includes('/postgres/')), process.env);
  if (!filter) status = (await postgresPass(list(onPostgres))) || status;
}
process.exit(status);
