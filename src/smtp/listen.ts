/**
 * Starting and stopping an smtp-server instance as a `Listener`. On close the
 * listener stops accepting, says 421 at once to every session that is not
 * sending its message data, and gives those that are the shutdown grace
 * period to finish (a message is answered only after it is durable, so a
 * client cut off before its 250 retries; nothing is lost either way).
 */
import type { AddressInfo } from 'node:net';
import type { SMTPServer } from 'smtp-server';
import type { Logger } from '../logger';
import type { Listener } from '../modules';

export interface Busy {
  /** session ids whose message data is being received or stored right now */
  has(sessionId: string): boolean;
}

/**
 * Errors of client connections surface as 'error' events of the server; an
 * unhandled one would end the process, so they are logged (a client that
 * vanished mid-transaction is routine, not a fault of ours).
 */
export function listen(server: SMTPServer, name: string, host: string, port: number, busy: Busy, log: Logger): Promise<Listener> {
  return new Promise((resolve, reject) => {
    let listening = false;
    server.on('error', (err: Error & { code?: string; remoteAddress?: string }) => {
      if (!listening) return reject(new Error(`${name} cannot listen on ${host}:${port}: ${err.message}`));
      log.info({ listener: name, code: err.code, remoteAddress: err.remoteAddress }, `${name}: connection error: ${err.message}`);
    });
    server.listen(port, host, () => {
      listening = true;
      const bound = (server.server.address() as AddressInfo).port;
      resolve({ name, host, port: bound, close: () => closeServer(server, busy) });
    });
  });
}

function closeServer(server: SMTPServer, busy: Busy): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    for (const connection of server.connections) {
      // smtp-server answers every further command 421 once closing; only DATA in progress can still finish
      if (!busy.has(connection.id)) {
        connection.send(421, '4.3.2 Service shutting down');
        connection.close();
      }
    }
  });
}
