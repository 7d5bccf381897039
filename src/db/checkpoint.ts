/**
 * WAL checkpoints off the commit path. With SQLite's automatic checkpoint,
 * the commit that crosses 1,000 WAL pages copies them into the database file
 * before it returns: a stall every few dozen messages, on the one writer.
 * The server's writer turns that off (openDatabase autoCheckpoint: false) and
 * this worker runs a PASSIVE checkpoint once a second from a connection of
 * its own: it copies what no reader still needs and never blocks the writer
 * or readers. journal_size_limit then keeps the WAL file from staying large.
 */
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Worker } from '../modules';
import { openDatabase, type Db } from './index';

export function checkpointWorker(config: Config, log: Logger, intervalMs = 1000): Worker {
  let db: Db | undefined;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const tick = () => {
    running = (async () => {
      try {
        await db?.raw('PRAGMA wal_checkpoint(PASSIVE)');
      } catch (err) {
        log.warn({ err }, 'WAL checkpoint failed; the next one will try again');
      }
    })();
  };
  return {
    name: 'checkpoint',
    start() {
      db = openDatabase(config);
      timer = setInterval(tick, intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await running;
      await db?.destroy();
      db = undefined;
    },
  };
}
