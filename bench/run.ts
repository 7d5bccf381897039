/**
 * `npm run bench [mode] [--options]`: the entry of every benchmark. Each mode
 * lives in its own file and registers here with one line, so engineers can
 * add theirs without touching each other's code.
 *
 *   node dist/bench/run.js accept [--seconds=2] [--group-commit=both|on|off] [--window-ms=0]
 *                                 [--recipients=1,10] [--concurrency=1,10,50]
 *   node dist/bench/run.js accept-store [--messages=2000] [--concurrency=1,10,50]
 *   node dist/bench/run.js delivery [--messages=2000] [--size=5000] [--concurrency=20] [--reuse=both|on|off]
 *   node dist/bench/run.js dkim [--seconds=3] [--threads=0,1,<cores>] [--size=5000]
 *   node dist/bench/run.js mime [--rounds=3] [--attachment-mb=7] [--messages=5000]
 *   node dist/bench/run.js smtp [--seconds=2.5] [--concurrency=1,10,50] [--tls=off|on]
 *   node dist/bench/run.js analytics [--messages=1000000] [--days=365] [--suppressions=1000000] [--runs=15] [--rebuild] [--data=DIR]
 *   node --expose-gc dist/bench/run.js suppression-upload [--rows=1000000]
 *   node dist/bench/run.js suppression-upload-contention [--rows=1000000] [--baseline-seconds=5]
 *   node dist/bench/run.js compare [--only=e2e,webhook,api,smtp,latency,queue,crash,statements,floor,nodes] [--rounds=2] [--seconds=8] [--nodes=2] ...
 *                                  (Postfix side by side; see docs/benchmarks.md)
 *   node dist/bench/run.js webhooks [--events=2000] [--concurrency=1,10] [--parts=sink,dispatch,claim,hanging]
 *   node dist/bench/run.js row-forms [--rows=20] [--transactions=400] [--rounds=3]
 */
type Mode = (args: string[]) => Promise<void>;

// One line per mode; require keeps each mode's code unloaded until chosen.
const MODES: Record<string, () => Mode> = {
  accept: () => (require('./accept') as typeof import('./accept')).run,
  'accept-store': () => (require('./accept-store') as typeof import('./accept-store')).run,
  delivery: () => (require('./delivery') as typeof import('./delivery')).run,
  smtp: () => (require('./smtp') as typeof import('./smtp')).run,
  dkim: () => (require('./dkim') as typeof import('./dkim')).run,
  mime: () => (require('./mime') as typeof import('./mime')).run,
  analytics: () => (require('./analytics') as typeof import('./analytics')).run,
  'suppression-upload': () => (require('./suppressions') as typeof import('./suppressions')).run,
  'suppression-upload-contention': () => (require('./upload-contention') as typeof import('./upload-contention')).run,
  compare: () => (require('./compare') as typeof import('./compare')).run,
  webhooks: () => (require('./webhooks') as typeof import('./webhooks')).run,
  'row-forms': () => (require('./row-forms') as typeof import('./row-forms')).run,
};

async function main(): Promise<void> {
  const [name = 'accept', ...args] = process.argv.slice(2);
  const load = MODES[name];
  if (!load) {
    console.error(`unknown bench mode '${name}'; modes: ${Object.keys(MODES).join(', ')}`);
    process.exit(2);
  }
  await load()(args);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
