/*
 * A self-signed certificate for the loopback test servers (STARTTLS on the SMTP
 * sink, HTTPS on the webhook receiver). Node 20 cannot build X.509 certificates
 * and we add no dependency for it, so openssl makes one, once per process.
 * smtp-server's built-in certificate is not used: it expired in February 2025.
 */
import { execFileSync } from 'node:child_process';

export interface TestCertificate {
  /** PEM private key */
  key: string;
  /** PEM certificate; pass it as `ca` to a client that should trust the server */
  cert: string;
}

let cached: TestCertificate | undefined;

/** CN=localhost, SAN localhost, 127.0.0.1 and ::1, valid for two days from now. */
export function testCertificate(): TestCertificate {
  if (!cached) cached = generate();
  return cached;
}

function generate(): TestCertificate {
  // prettier-ignore
  const pem = execFileSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2',
    '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
    '-keyout', '-', '-out', '-',
  ], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const key = pem.match(/-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----\n/)?.[0];
  const cert = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n/)?.[0];
  if (!key || !cert) throw new Error('openssl did not print a key and a certificate');
  return { key, cert };
}
