/**
 * Counts calls into the sqlite3 driver that each go to its thread and back: `exec`, and `all`/`run`/`get`/`each`
 * of a handle or of a prepared statement (a statement's first preparation is one more, not counted: the
 * statement cache keeps them). Install it before the connections are made, since the statement cache binds a
 * connection's methods then; `restore` puts the driver back.
 */
import sqlite3 from 'sqlite3';

export function countDriverTrips(): { trips: string[]; restore(): void } {
  const trips: string[] = [];
  const undo: Array<() => void> = [];
  const patch = (proto: Record<string, unknown>, names: string[], prefix: string) => {
    for (const name of names) {
      const original = proto[name] as (...args: unknown[]) => unknown;
      proto[name] = function (this: unknown, ...args: unknown[]) {
        trips.push(`${prefix}${name} ${String(args[0]).slice(0, 40)}`);
        return original.apply(this, args);
      };
      undo.push(() => (proto[name] = original));
    }
  };
  patch(sqlite3.Database.prototype as unknown as Record<string, unknown>, ['exec', 'all', 'run', 'get', 'each'], '');
  patch(sqlite3.Statement.prototype as unknown as Record<string, unknown>, ['all', 'run', 'get', 'each'], 'statement.');
  return { trips, restore: () => undo.reverse().forEach((u) => u()) };
}
