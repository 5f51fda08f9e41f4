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
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL: /],
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
