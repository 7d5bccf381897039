/**
 * The certificate of both SMTP listeners. A configured one
 * (`smtp.submission.tlsCert` / `tlsKey`) is used as is. Without one, a
 * self-signed certificate for `hostname` is generated on first start into
 * `<dataDir>/tls/self-signed.pem` (key and certificate in one file, so two
 * processes starting at once can never pair one's key with the other's
 * certificate) and renewed when it is about to expire. Node cannot build
 * X.509 certificates and Pigeon adds no dependency for it, so `openssl` makes
 * it; without openssl and without a configured certificate, start fails with
 * a message saying what to configure. A self-signed certificate is fine on
 * loopback and in development; on a VPS configure a real one.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Config } from '../config';
import { ensurePrivateDir } from '../util/private-fs';

export interface TlsMaterial {
  key: string;
  cert: string;
  source: 'configured' | 'self-signed';
  /** the file the certificate was read from */
  file: string;
}

const RENEW_BEFORE_MS = 30 * 86_400_000;
const VALID_DAYS = 825;

export const selfSignedFile = (config: Pick<Config, 'dataDir'>): string => path.resolve(config.dataDir, 'tls', 'self-signed.pem');

export function pemBlocks(pem: string): { key?: string; cert?: string } {
  return {
    key: pem.match(/-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----[\s\S]+?-----END (?:[A-Z]+ )?PRIVATE KEY-----\r?\n?/)?.[0],
    cert: pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\r?\n?/)?.[0],
  };
}

/** The certificate to use, generating the self-signed one when needed. Throws with advice when impossible. */
export async function loadTls(config: Config, now: number): Promise<TlsMaterial> {
  const { tlsCert, tlsKey } = config.smtp.submission;
  if (tlsCert || tlsKey) return readConfigured(tlsCert, tlsKey);
  const file = selfSignedFile(config);
  const existing = readSelfSigned(file, now);
  if (existing) return existing;
  const pem = await generate(config);
  ensurePrivateDir(path.dirname(file));
  writeAtomically(file, pem);
  const made = readSelfSigned(file, now);
  if (!made) throw new Error(`openssl produced an unusable certificate in ${file}`);
  return made;
}

function readConfigured(certFile: string, keyFile: string): TlsMaterial {
  if (!certFile || !keyFile) throw new Error('smtp.submission.tlsCert and smtp.submission.tlsKey must be set together');
  const read = (file: string, what: string) => {
    try {
      return fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`cannot read ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? err}`);
    }
  };
  const cert = read(certFile, 'smtp.submission.tlsCert');
  const key = read(keyFile, 'smtp.submission.tlsKey');
  const x509 = new crypto.X509Certificate(cert);
  if (!x509.checkPrivateKey(crypto.createPrivateKey(key))) throw new Error(`${keyFile} is not the private key of ${certFile}`);
  return { key, cert, source: 'configured', file: certFile };
}

/** The stored self-signed pair when it exists, parses and is not about to expire. */
function readSelfSigned(file: string, now: number): TlsMaterial | null {
  let pem: string;
  try {
    pem = fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  const { key, cert } = pemBlocks(pem);
  if (!key || !cert) return null;
  try {
    const x509 = new crypto.X509Certificate(cert);
    if (Date.parse(x509.validTo) - now < RENEW_BEFORE_MS) return null;
  } catch {
    return null;
  }
  return { key, cert, source: 'self-signed', file };
}

function subjectAltName(config: Config): string {
  const names = [`DNS:${config.hostname}`];
  const host = config.smtp.submission.host;
  if (net.isIP(host) && host !== '0.0.0.0' && host !== '::') names.push(`IP:${host}`);
  return names.join(',');
}

/** ECDSA P-256: generated in milliseconds (RSA takes up to a second) and accepted by every current TLS client. */
function generate(config: Config): Promise<string> {
  const args = [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', String(VALID_DAYS),
    '-subj', `/CN=${config.hostname.replace(/[/\\=]/g, '')}`, '-addext', `subjectAltName=${subjectAltName(config)}`,
    '-keyout', '-', '-out', '-',
  ];
  return new Promise((resolve, reject) => {
    execFile('openssl', args, { encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) => {
      if (err && (err as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(new Error('no TLS certificate configured and openssl is not installed to generate a self-signed one: '
          + 'set smtp.submission.tlsCert and smtp.submission.tlsKey (PEM files), or install openssl'));
      } else if (err) {
        reject(new Error(`openssl could not generate a self-signed certificate: ${String(stderr).trim() || err.message}`));
      } else resolve(stdout);
    });
  });
}

/** tmp + fsync + rename: a crash never leaves half a file, and the key is 0600 from the start. */
function writeAtomically(file: string, content: string): void {
  const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
  const fd = fs.openSync(tmp, 'wx', 0o600);
  try {
    fs.writeSync(fd, content);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}

/** One line about a certificate, for logs and `pigeon doctor`. */
export function describeCertificate(cert: string): { subject: string; validTo: string; expiresAt: number; selfSigned: boolean } {
  const x509 = new crypto.X509Certificate(cert);
  return {
    subject: x509.subject.replace(/\n/g, ', '),
    validTo: x509.validTo,
    expiresAt: Date.parse(x509.validTo),
    selfSigned: x509.checkIssued(x509) && x509.verify(x509.publicKey),
  };
}
