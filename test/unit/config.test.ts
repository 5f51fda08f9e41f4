import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { authKeyOf, ConfigError, loadConfig } from '../../src/config.js';

describe('configuration from the environment', () => {
  it('has safe defaults for a developer machine', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ HOST: '127.0.0.1', PORT: 3000, MONGODB_DB: 'cloudly_release', LOG_LEVEL: 'info', DATA_DIR: '.data' });
    expect(config.MONGODB_URI).toBeUndefined();
    expect(authKeyOf(config)).toBeUndefined();
  });

  it('converts and reads every variable', () => {
    const config = loadConfig({ PORT: '8080', HOST: '0.0.0.0', MONGODB_URI: 'mongodb://db:27017/?replicaSet=rs0', MONGODB_DB: 'prod', AUTH_JWT_SECRET: 'x'.repeat(32), LOG_LEVEL: 'warn' });
    expect(config).toMatchObject({ PORT: 8080, HOST: '0.0.0.0', MONGODB_URI: 'mongodb://db:27017/?replicaSet=rs0', MONGODB_DB: 'prod', LOG_LEVEL: 'warn' });
    expect(authKeyOf(config)).toMatchObject({ kind: 'secret' });
  });

  it('leaves LOCAL_DATABASE_PORT unset unless given (then 27027 when free, else any free port), and reads it as an integer', () => {
    expect(loadConfig({}).LOCAL_DATABASE_PORT).toBeUndefined();
    expect(loadConfig({ LOCAL_DATABASE_PORT: '' }).LOCAL_DATABASE_PORT).toBeUndefined();
    expect(loadConfig({ LOCAL_DATABASE_PORT: '27100' }).LOCAL_DATABASE_PORT).toBe(27100);
    expect(loadConfig({ LOCAL_DATABASE_PORT: '0' }).LOCAL_DATABASE_PORT).toBe(0);
  });

  it('reads <NAME>_FILE (Docker secrets) for MONGODB_URI, AUTH_JWT_SECRET and METRICS_TOKEN; the variable itself wins', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cloudly-config-'));
    try {
      const file = (name: string, content: string): string => { writeFileSync(join(dir, name), content); return join(dir, name); };
      const config = loadConfig({
        MONGODB_URI_FILE: file('uri', 'mongodb://cloudly:pw@mongo:27017/?replicaSet=rs0&authSource=admin\n'),
        AUTH_JWT_SECRET_FILE: file('jwt', `${'s'.repeat(40)}\n`),
        METRICS_TOKEN_FILE: file('metrics', 'm'.repeat(20)),
      });
      expect(config).toMatchObject({ MONGODB_URI: 'mongodb://cloudly:pw@mongo:27017/?replicaSet=rs0&authSource=admin', METRICS_TOKEN: 'm'.repeat(20) });
      expect(authKeyOf(config)).toEqual({ kind: 'secret', secret: 's'.repeat(40) });
      expect(loadConfig({ MONGODB_URI: 'mongodb://db/', MONGODB_URI_FILE: file('other', 'mongodb://other/') }).MONGODB_URI).toBe('mongodb://db/');
      expect(() => loadConfig({ MONGODB_URI_FILE: join(dir, 'missing') })).toThrow(/^MONGODB_URI_FILE: cannot read .*missing \(ENOENT\)$/);
      // A secret read from a file is checked like the variable, and never echoed.
      expect(() => loadConfig({ AUTH_JWT_SECRET_FILE: file('short', 'hunter2') })).toThrow(/^AUTH_JWT_SECRET: (?!.*hunter2)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ AUTH_JWT_SECRET: '', PORT: '' })).toMatchObject({ PORT: 3000 });
  });

  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'eighty' }, /^PORT: /],
    [{ PORT: '70000' }, /^PORT: /],
    [{ MONGODB_URI: 'postgres://x' }, /^MONGODB_URI: /],
    [{ MONGODB_DB: 'a.b' }, /^MONGODB_DB: /],
    [{ AUTH_JWT_SECRET: 'short' }, /^AUTH_JWT_SECRET: /],
    [{ AUTH_JWT_PUBLIC_KEY: 'not a pem' }, /^AUTH_JWT_PUBLIC_KEY: /],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent \(got "loud"\)$/],
    [{ AUTH_JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----', AUTH_JWT_ALGORITHM: 'FOO' }, /^AUTH_JWT_ALGORITHM: .*expected one of RS256, .*EdDSA/],
    [{ LOCAL_DATABASE_PORT: 'next' }, /^LOCAL_DATABASE_PORT: .*\(got "next"\)/],
    [{ LOCAL_DATABASE_PORT: '65536' }, /^LOCAL_DATABASE_PORT: /],
    [{ LOCAL_DATABASE_PORT: '-1' }, /^LOCAL_DATABASE_PORT: /],
    [{ LOCAL_DATABASE_PORT: '27027.5' }, /^LOCAL_DATABASE_PORT: .*Expected integer \(got "27027\.5"\)/],
    // Integers are written as integers: TypeBox alone read these as 3000, 1 and 16.
    [{ PORT: '3000.5' }, /^PORT: .*Expected integer \(got "3000\.5"\)/],
    [{ PORT: '1e3' }, /^PORT: .*Expected integer/],
    [{ SHUTDOWN_TIMEOUT_MS: '0x10' }, /^SHUTDOWN_TIMEOUT_MS: Expected integer/],
    [{ AUTH_JWT_SECRET: 'x'.repeat(32), AUTH_JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----' }, /^AUTH_JWT_SECRET: set either/],
  ];
  for (const [env, message] of bad) {
    it(`stops on ${JSON.stringify(env).slice(0, 60)} naming the variable`, () => {
      expect(() => loadConfig(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).toThrow(message);
    });
  }

  it('never echoes a secret in the message', () => {
    expect(() => loadConfig({ AUTH_JWT_SECRET: 'hunter2' })).toThrow(/^(?!.*hunter2)/);
  });
});
