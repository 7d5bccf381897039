/**
 * Temporary directories that a test process removes when it exits. node:test runs each test file in its own
 * process, so a directory used across a file's tests (a CA file, a shared dataDir) lives until that file is done,
 * and the CI machine's /tmp is not left with one more per run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const made: string[] = [];

process.on('exit', () => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

/** A new directory under the system's temporary directory, named `pigeon-<prefix>-…`, removed at exit. */
export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `pigeon-${prefix}-`));
  made.push(dir);
  return dir;
}
