/**
 * Lease owners: `host/pid/nonce`, so a later start on the same host can tell
 * the leases of a process that died (kill -9, power loss) and release them at
 * once instead of waiting for them to lapse.
 */
import os from 'node:os';
import crypto from 'node:crypto';
import type { Queryable } from '../db';
import { leaseOwners, releaseLeasesOf } from './claims';

export function newOwner(): string {
  return `${os.hostname()}/${process.pid}/${crypto.randomBytes(4).toString('hex')}`;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Releases the leases of owners on this host whose process is gone, or whose pid is ours (we are a later start). */
export async function releaseDeadLeases(db: Queryable, self: string): Promise<number> {
  const host = os.hostname();
  const dead = (await leaseOwners(db)).filter((owner) => {
    if (owner === self) return false;
    const [h, pid] = owner.split('/');
    return h === host && (Number(pid) === process.pid || !processAlive(Number(pid)));
  });
  return releaseLeasesOf(db, dead);
}
