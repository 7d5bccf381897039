/**
 * `pigeon doctor`: which certificate the SMTP listeners present, and whether
 * it is one a remote client can trust. A self-signed one (generated on first
 * start) is a warning with the fix: configure a real certificate.
 */
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import { systemClock } from '../clock';
import type { Config } from '../config';
import type { CheckResult } from '../cli/doctor';
import { describeCertificate, pemBlocks, selfSignedFile } from './tls';

const NAME = 'smtp tls certificate';
const DAY = 86_400_000;
const REAL_CERT_ADVICE = 'set smtp.submission.tlsCert and tlsKey to a certificate for this host name (e.g. from Let\'s Encrypt)';

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export async function checkSmtpTls(config: Config, now = systemClock.now()): Promise<CheckResult[]> {
  const { tlsCert, tlsKey } = config.smtp.submission;
  if (tlsCert || tlsKey) {
    try {
      const info = describeCertificate(fs.readFileSync(tlsCert, 'utf8'));
      fs.accessSync(tlsKey, fs.constants.R_OK);
      const days = Math.floor((info.expiresAt - now) / DAY);
      const detail = `${tlsCert}: ${info.subject}, expires ${info.validTo}`;
      if (days < 0) return [{ name: NAME, status: 'fail', detail: `${detail}: expired; renew it` }];
      if (info.selfSigned) return [{ name: NAME, status: 'warn', detail: `${detail}: self-signed; clients will not trust it` }];
      return [{ name: NAME, status: days < 14 ? 'warn' : 'ok', detail: days < 14 ? `${detail}: renew it soon` : detail }];
    } catch (err) {
      return [{ name: NAME, status: 'fail', detail: `cannot use smtp.submission.tlsCert/tlsKey: ${(err as Error).message}` }];
    }
  }
  const file = selfSignedFile(config);
  const cert = fs.existsSync(file) ? pemBlocks(fs.readFileSync(file, 'utf8')).cert : undefined;
  if (cert) {
    const info = describeCertificate(cert);
    return [{ name: NAME, status: 'warn', detail: `self-signed certificate ${file} (${info.subject}, expires ${info.validTo}) in use; on a VPS ${REAL_CERT_ADVICE}` }];
  }
  if (!hasOpenssl()) return [{ name: NAME, status: 'fail', detail: `no certificate configured and openssl is missing to generate one: ${REAL_CERT_ADVICE}` }];
  return [{ name: NAME, status: 'warn', detail: `no certificate configured; a self-signed one will be generated at ${file} on first start; on a VPS ${REAL_CERT_ADVICE}` }];
}
