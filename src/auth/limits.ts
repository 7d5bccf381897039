/**
 * Per-account caps (limits.*PerAccount): one tenant must not grow its rows
 * without bound and slow every query that scans them. One more than the cap is
 * a 409 limit_reached that names the cap and its config key.
 */
import { conflict } from '../http/errors';

export function limitReached(what: string, cap: number, configKey: string): never {
  throw conflict('limit_reached', `this account already has ${cap} ${what}, the most limits.${configKey} allows; remove one first`);
}

/** Throws limit_reached when `count` rows already fill the cap. */
export function checkCap(count: number, cap: number, what: string, configKey: string): void {
  if (count >= cap) limitReached(what, cap, configKey);
}
