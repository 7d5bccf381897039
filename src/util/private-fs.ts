/**
 * The data directory holds the database, the at-rest key and TLS keys: only
 * the service user may read it, whatever the umask it was started with
 * (systemd sets UMask=0077; a shell, Docker or a CLI run may not).
 */
import fs from 'node:fs';

/** Creates `dir` (and parents) 0700, and tightens it to 0700 when it already exists and is ours. */
export function ensurePrivateDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodIfOwner(dir, 0o700);
}

/**
 * Creates `file` empty with mode 0600 when missing, and tightens an existing
 * one to 0600. SQLite gives its -wal and -shm files the mode of the database
 * file, so this covers them too.
 */
export function ensurePrivateFile(file: string): void {
  // Opened only to create it: closing any descriptor of a file drops every POSIX lock this process holds on it,
  // SQLite's among them, when the server's own connections have the database open.
  try {
    fs.closeSync(fs.openSync(file, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  chmodIfOwner(file, 0o600);
}

/** chmod overrides the umask; a directory the operator owns (not us) is left as it is. */
function chmodIfOwner(target: string, mode: number): void {
  const stat = fs.statSync(target);
  if ((stat.mode & 0o777) === mode) return;
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) return;
  fs.chmodSync(target, mode);
}
