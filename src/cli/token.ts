#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { Value } from '@sinclair/typebox/value';
import { authKeyOf, ConfigError, loadConfig } from '../config.js';
import { readDevSecret, devSecretPath } from '../devSecret.js';
import { mintToken } from '../http/auth.js';
import { PrincipalType, Role } from '../domain/principal.js';

const usage = `usage: npm run token -- --role admin|user|api|cluster [--cluster-id ID] [--sub NAME] [--type human|machine] [--ttl SECONDS]

Prints a JWT signed with the configured key: AUTH_JWT_SECRET, or AUTH_JWT_PRIVATE_KEY
(PKCS#8 PEM, with AUTH_JWT_ALGORITHM) when the service verifies with AUTH_JWT_PUBLIC_KEY,
or else the development secret that \`npm start\` keeps under DATA_DIR.`;

async function main (): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        role: { type: 'string' },
        'cluster-id': { type: 'string' },
        sub: { type: 'string' },
        type: { type: 'string' },
        ttl: { type: 'string', default: '3600' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${usage}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  if (!Value.Check(Role, values.role)) {
    process.stderr.write(`--role must be one of admin, user, api, cluster\n${usage}\n`);
    return 2;
  }
  const role = values.role;
  if (values.type !== undefined && !Value.Check(PrincipalType, values.type)) {
    process.stderr.write('--type must be human or machine\n');
    return 2;
  }
  if (role === 'cluster' && !values['cluster-id']) {
    process.stderr.write('--cluster-id is required for --role cluster\n');
    return 2;
  }
  const ttl = Number(values.ttl);
  if (!Number.isSafeInteger(ttl) || ttl < 1) {
    process.stderr.write('--ttl must be a positive number of seconds\n');
    return 2;
  }

  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const privateKey = process.env['AUTH_JWT_PRIVATE_KEY'];
  const auth = authKeyOf(config);
  let signing: Parameters<typeof mintToken>[0];
  if (auth?.kind === 'secret') {
    signing = { kind: 'secret', secret: auth.secret };
  } else if (auth?.kind === 'public-key') {
    if (!privateKey) {
      process.stderr.write('AUTH_JWT_PUBLIC_KEY is set: give the matching private key in AUTH_JWT_PRIVATE_KEY to mint a token\n');
      return 2;
    }
    signing = { kind: 'private-key', pem: privateKey, algorithm: auth.algorithm };
  } else {
    const secret = await readDevSecret(config.DATA_DIR);
    if (!secret) {
      const where = devSecretPath(config.DATA_DIR);
      process.stderr.write(`no key configured and no development secret at ${where}: run \`npm start\` once, or set AUTH_JWT_SECRET\n`);
      return 2;
    }
    signing = { kind: 'secret', secret };
  }
  const type = values.type as PrincipalType | undefined;
  const token = await mintToken(signing, {
    subject: values.sub ?? `local-${role}`,
    role,
    ...(type ? { type } : {}),
    ...(values['cluster-id'] ? { clusterId: values['cluster-id'] } : {}),
    ttlSeconds: ttl,
  });
  process.stdout.write(`${token}\n`);
  return 0;
}

process.exitCode = await main();
