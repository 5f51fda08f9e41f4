#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { Value } from '@sinclair/typebox/value';
import { authKeyOf, ConfigError, loadConfig, type AppConfig } from '../config.js';
import { readDevSecret, devSecretPath } from '../devSecret.js';
import { PrincipalType, Role } from '../domain/principal.js';
import { mintToken, type MintOptions, type TokenSigning } from '../domain/tokens.js';

const usage = `usage: npm run token -- --role admin|user|api|cluster [--cluster-id ID] [--sub NAME] [--type human|machine] [--ttl SECONDS]

Prints a JWT signed with the configured key: AUTH_JWT_SECRET, or AUTH_JWT_PRIVATE_KEY
(PKCS#8 PEM, with AUTH_JWT_ALGORITHM) when the service verifies with AUTH_JWT_PUBLIC_KEY,
or else the development secret that \`npm start\` keeps under DATA_DIR.`;

/** Why the command stops before printing a token: the line for stderr and the exit code. */
class Refusal {
  constructor (readonly message: string, readonly exitCode = 2) {}
}

/** What the command line asks for: a token (its claims), or the usage. */
type Request = { help: true } | { help: false, claims: MintOptions };

function parsedArguments (): Request {
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
    throw new Refusal(`${(err as Error).message}\n${usage}`);
  }
  if (values.help) return { help: true };
  if (!Value.Check(Role, values.role)) throw new Refusal(`--role must be one of admin, user, api, cluster\n${usage}`);
  const role = values.role;
  if (values.type !== undefined && !Value.Check(PrincipalType, values.type)) throw new Refusal('--type must be human or machine');
  if (role === 'cluster' && !values['cluster-id']) throw new Refusal('--cluster-id is required for --role cluster');
  const ttl = Number(values.ttl);
  if (!Number.isSafeInteger(ttl) || ttl < 1) throw new Refusal('--ttl must be a positive number of seconds');
  const type = values.type as PrincipalType | undefined;
  return {
    help: false,
    claims: {
      subject: values.sub ?? `local-${role}`,
      role,
      ...(type ? { type } : {}),
      ...(values['cluster-id'] ? { clusterId: values['cluster-id'] } : {}),
      ttlSeconds: ttl,
    },
  };
}

function configuration (): AppConfig {
  try {
    return loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) throw new Refusal(`configuration error: ${err.message}`);
    throw err;
  }
}

/** The key to sign with: the configured secret, the private key matching the configured public key, or the development secret. */
async function signingKey (config: AppConfig): Promise<TokenSigning> {
  const auth = authKeyOf(config);
  if (auth?.kind === 'secret') return { kind: 'secret', secret: auth.secret };
  if (auth?.kind === 'public-key') {
    const privateKey = process.env['AUTH_JWT_PRIVATE_KEY'];
    if (!privateKey) throw new Refusal('AUTH_JWT_PUBLIC_KEY is set: give the matching private key in AUTH_JWT_PRIVATE_KEY to mint a token');
    return { kind: 'private-key', pem: privateKey, algorithm: auth.algorithm };
  }
  const secret = await readDevSecret(config.DATA_DIR);
  if (!secret) {
    const where = devSecretPath(config.DATA_DIR);
    throw new Refusal(`no key configured and no development secret at ${where}: run \`npm start\` once, or set AUTH_JWT_SECRET`);
  }
  return { kind: 'secret', secret };
}

async function main (): Promise<number> {
  try {
    const request = parsedArguments();
    if (request.help) {
      process.stdout.write(`${usage}\n`);
      return 0;
    }
    const signing = await signingKey(configuration());
    process.stdout.write(`${await mintToken(signing, request.claims)}\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    process.stderr.write(`${err.message}\n`);
    return err.exitCode;
  }
}

process.exitCode = await main();
