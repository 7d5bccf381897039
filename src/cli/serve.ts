/** `pigeon serve`: run the appliance until SIGTERM/SIGINT, then stop cleanly and exit 0. */
import { createApp } from '../app';
import { bootstrapBanner } from '../auth/bootstrap';
import type { CliContext } from './common';

export async function serveCommand(ctx: CliContext): Promise<void> {
  const app = await createApp(ctx.config);
  if (app.bootstrapKey) process.stderr.write(bootstrapBanner(app.bootstrapKey, app.http.url));
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      process.exit(1); // a second signal means "now"
    }
    stopping = true;
    app.deps.log.info({ signal }, 'stopping');
    app.close().then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`shutdown failed: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
