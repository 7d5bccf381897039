/**
 * Browser harness for the console tests and the screenshot script: Debian's
 * Chromium driven by playwright-core (no browser download), a fresh profile
 * per launch, and users created through the real CLI.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { CLI } from '../support/cli';
import type { TestApp } from '../support/app';

export const CHROMIUM = process.env.PIGEON_CHROMIUM ?? '/usr/bin/chromium';

/** Why browser tests cannot run here, or undefined when they can (CI installs Chromium, so they run there). */
export const skipBrowser: string | undefined = fs.existsSync(CHROMIUM)
  ? undefined
  : `Chromium not found at ${CHROMIUM}: install Debian's chromium package (apt-get install chromium) or set PIGEON_CHROMIUM`;

export interface Browser { context: BrowserContext; page: Page; close(): Promise<void> }

export async function launchBrowser(viewport = { width: 1280, height: 800 }): Promise<Browser> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  context.setDefaultTimeout(15_000);
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A config file the CLI reads to reach the app's database. */
export function cliConfig(app: TestApp): string {
  const file = path.join(app.dataDir, 'cli-config.json');
  fs.writeFileSync(file, JSON.stringify({ dataDir: app.dataDir, http: { publicUrl: app.http.url } }));
  return file;
}

/** `pigeon users create` with the password on stdin, as a sysadmin scripts it. */
export async function createUser(app: TestApp, user: { email: string; role: 'admin' | 'member'; account?: string; password: string }): Promise<void> {
  const args = [CLI, 'users', 'create', '--email', user.email, '--role', user.role, ...(user.account ? ['--account', user.account] : []), '--config', cliConfig(app)];
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  child.stdin.end(`${user.password}\n`);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`pigeon users create exited ${code}: ${output}`);
}

/** Signs in through the form, by its accessible labels, and waits for the shell. */
export async function signIn(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}
