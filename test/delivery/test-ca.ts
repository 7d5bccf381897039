/*
 * A certificate authority made for one test run, and leaf certificates it
 * issues for chosen DNS names: what MTA-STS needs to tell a valid MX or policy
 * host certificate from a bad one. openssl makes them (Node 20 cannot build
 * X.509); the app trusts the CA through delivery.tlsCaFile.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestCa {
  /** PEM certificate of the CA; write it to a file for delivery.tlsCaFile */
  cert: string;
  /** a key and certificate for these DNS names, signed by the CA */
  issue(names: string[]): { key: string; cert: string };
  /** the CA certificate as a file, for delivery.tlsCaFile */
  file: string;
  remove(): void;
}

const run = (args: string[], cwd: string): void => {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
};

export function createTestCa(): TestCa {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-ca-'));
  // prettier-ignore
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=Pigeon Test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    '-keyout', 'ca.key', '-out', 'ca.pem'], dir);
  let serial = 0;
  return {
    cert: fs.readFileSync(path.join(dir, 'ca.pem'), 'utf8'),
    file: path.join(dir, 'ca.pem'),
    issue(names) {
      const n = ++serial;
      fs.writeFileSync(path.join(dir, `leaf${n}.ext`), `subjectAltName=${names.map((d) => `DNS:${d}`).join(',')}\n`);
      // prettier-ignore
      run(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${names[0]}`, '-keyout', `leaf${n}.key`, '-out', `leaf${n}.csr`], dir);
      // prettier-ignore
      run(['x509', '-req', '-in', `leaf${n}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-set_serial', String(1000 + n), '-days', '2',
        '-extfile', `leaf${n}.ext`, '-out', `leaf${n}.pem`], dir);
      return { key: fs.readFileSync(path.join(dir, `leaf${n}.key`), 'utf8'), cert: fs.readFileSync(path.join(dir, `leaf${n}.pem`), 'utf8') };
    },
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
