import { buildApp } from './app.js';
import { ConfigError, loadConfig, type AuthKey } from './config.js';
import { loadOrCreateDevSecret, devSecretPath } from './devSecret.js';
import { resolveServiceDatabase } from './store/databaseResolution.js';

/**
 * `npm start`: config → database (MONGODB_URI, else the local development
 * database under DATA_DIR) → buildApp → listen. SIGTERM/SIGINT stop accepting
 * connections, let in-flight requests finish (bounded by SHUTDOWN_TIMEOUT_MS),
 * close the database, and exit 0.
 */
async function main (): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }

  let auth: AuthKey | undefined = config.auth;
  let devSecretNote: string | undefined;
  if (!auth) {
    const { secret, created } = await loadOrCreateDevSecret(config.dataDir);
    auth = { kind: 'secret', secret };
    devSecretNote = `no AUTH_JWT_SECRET/AUTH_JWT_PUBLIC_KEY set: using the development secret ${created ? 'just created ' : ''}in ${devSecretPath(config.dataDir)}. Mint a token with: npm run token -- --role admin`;
  }

  const log = (line: string): void => { process.stderr.write(`${line}\n`); };
  const database = await resolveServiceDatabase({ ...(config.mongodbUri ? { mongodbUri: config.mongodbUri } : {}), dataDir: config.dataDir }, log);
  const app = await buildApp({ config: { ...config, mongodbUri: database.uri, auth } });
  if (devSecretNote) app.log.warn(devSecretNote);

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: draining in-flight requests');
    const timer = setTimeout(() => {
      app.log.error({ timeoutMs: config.shutdownTimeoutMs }, 'in-flight requests did not finish in time; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    try {
      await app.close();
      await database.stop();
      process.exitCode = 0;
    } catch (err) {
      app.log.error({ err }, 'error while shutting down');
      process.exitCode = 1;
    }
  };
  process.once('SIGTERM', () => { void shutdown('SIGTERM'); });
  process.once('SIGINT', () => { void shutdown('SIGINT'); });

  try {
    await app.listen({ host: config.host, port: config.port, listenTextResolver: (address) => `listening on ${address} (database: ${database.kind})` });
  } catch (err) {
    app.log.fatal({ err }, 'could not listen');
    await database.stop();
    process.exit(1);
  }
}

await main();
