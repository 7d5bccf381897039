/** `pigeon serve`: run the appliance until SIGTERM/SIGINT, then stop cleanly and exit 0. */
import { App, createApp } from '../app';
import { bootstrapBanner } from '../auth/bootstrap';
import type { CliContext } from './common';

export async function serveCommand(ctx: CliContext): Promise<void> {
  let app: App | undefined;
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) process.exit(1); // a second signal means "now"
    stopping = true;
    if (!app) return; // still starting: stop as soon as the start completes
    app.deps.log.info({ signal }, 'stopping');
    app.close().then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`shutdown failed: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  // Handlers first, so a signal during start-up is never fatal.
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  app = await createApp(ctx.config);
  if (app.bootstrapKey) process.stderr.write(bootstrapBanner(app.bootstrapKey, app.http.url));
  app.deps.log.info({ http: app.http.url.replace(/^http:\/\//, ''), listeners: Object.fromEntries(Object.values(app.listeners).map((l) => [l.name, `${l.host}:${l.port}`])) }, 'pigeon started');
  if (stopping) {
    stopping = false;
    stop('early signal');
  }
}
