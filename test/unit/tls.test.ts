import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/errors.ts';
import { RDS_CA, resolveCa, tlsOptions } from '../../lib/source/mysql/tls.ts';

/** Every certificate in a PEM bundle, parsed: a malformed one throws. */
const certificates = (pem: string) => (pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map((c) => new X509Certificate(c));
const commonName = (cert: X509Certificate) => /CN=([^\n]+)/.exec(cert.subject)?.[1];

describe('MySQL TLS options and CA resolution', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-ca-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const rds = resolveCa(RDS_CA);

  it('resolves "rds" to the Amazon RDS/Aurora root CAs of the regions and the roots RDS Proxy presents', () => {
    const certs = certificates(rds);
    expect(certs.length).toBeGreaterThan(50);
    // Nothing in the text is left unparsed: every BEGIN has a parsed certificate.
    expect(certs.length).toBe(rds.split('-----BEGIN CERTIFICATE-----').length - 1);
    for (const cert of certs) expect(cert.ca).toBe(true);
    const names = certs.map(commonName);
    for (const region of ['us-east-1', 'eu-west-1', 'ap-southeast-2']) {
      expect(names).toContain(`Amazon RDS ${region} Root CA RSA2048 G1`);
      expect(names).toContain(`Amazon RDS ${region} Root CA ECC384 G1`);
    }
    expect(names).toContain('Amazon RDS Root 2019 CA');
    expect(names).toContain('Amazon Root CA 1');
    // The current RDS roots are valid for decades; the bundle is not a stale copy.
    const rsa = certs.find((c) => commonName(c) === 'Amazon RDS us-east-1 Root CA RSA2048 G1');
    expect(new Date(rsa?.validTo ?? 0).getTime()).toBeGreaterThan(Date.now() + 10 * 365 * 86_400_000);
  });

  it('verify checks the chain against the resolved CA and the host name; required encrypts without checking; off is plain', () => {
    expect(tlsOptions('verify', RDS_CA)).toEqual({ ca: rds, rejectUnauthorized: true, verifyIdentity: true });
    const pem = rds.slice(0, rds.indexOf('-----END CERTIFICATE-----') + 25);
    const file = join(dir, 'ca.pem');
    writeFileSync(file, pem);
    expect(tlsOptions('verify', file)).toEqual({ ca: pem, rejectUnauthorized: true, verifyIdentity: true });
    expect(tlsOptions('verify', pem)).toEqual({ ca: pem, rejectUnauthorized: true, verifyIdentity: true });
    expect(tlsOptions('required', undefined)).toEqual({ rejectUnauthorized: false });
    expect(tlsOptions('required', RDS_CA)).toEqual({ rejectUnauthorized: false });
    expect(tlsOptions('off', RDS_CA)).toBeUndefined();
  });

  it('verify without a CA, or with one that is not a certificate, fails naming the variable and what it accepts', () => {
    expect(() => tlsOptions('verify', undefined)).toThrow(ConfigError);
    expect(() => tlsOptions('verify', undefined)).toThrow(
      'SLUICE_MYSQL_TLS=verify needs SLUICE_MYSQL_CA: "rds" (the Amazon RDS/Aurora CA bundle), PEM text, or a path to a PEM file',
    );
    expect(() => tlsOptions('verify', '')).toThrow(/needs SLUICE_MYSQL_CA/);
    expect(() => resolveCa(join(dir, 'missing.pem'))).toThrow(/^SLUICE_MYSQL_CA: cannot read .*missing\.pem \(ENOENT\); expected "rds"/);
    const key = join(dir, 'key.pem');
    writeFileSync(key, '-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n');
    expect(() => resolveCa(key)).toThrow(/^SLUICE_MYSQL_CA: .*key\.pem holds no PEM certificate; expected "rds"/);
    expect(() => resolveCa('-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----')).toThrow(/^SLUICE_MYSQL_CA: the value holds no PEM certificate/);
    expect(() => resolveCa('RDS')).toThrow(/cannot read RDS/);
  });
});
