/**
 * Lease owners: `node/pid/nonce` (node.id, default the hostname), so a later
 * start of the same node can tell the leases of a process that died (kill -9,
 * power loss) and release them at once instead of waiting for them to lapse.
 * Other nodes' leases are never touched here: they lapse by themselves, and
 * the node's name keeps two nodes on one host (or in one test process) apart.
 */
import os from 'node:os';
import crypto from 'node:crypto';
import type { Queryable } from '../db';
import { leaseOwners, releaseLeasesOf } from './claims';

/** This node's name as lease owners carry it. */
export const ownerNode = (nodeId: string): string => nodeId || os.hostname();

export function newOwner(nodeId = ''): string {
  return `${ownerNode(nodeId)}/${process.pid}/${crypto.randomBytes(4).toString('hex')}`;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Releases the leases of this node's owners whose process is gone, or whose pid is ours (we are a later start). */
export async function releaseDeadLeases(db: Queryable, self: string, nodeId = ''): Promise<number> {
  const host = ownerNode(nodeId);
  const dead = (await leaseOwners(db)).filter((owner) => {
    if (owner === self) return false;
    const [h, pid] = owner.split('/');
    return h === host && (Number(pid) === process.pid || !processAlive(Number(pid)));
  });
  return releaseLeasesOf(db, dead);
}
