import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { authKeyOf, ConfigError, loadConfig, type AppConfig } from './config.js';
import { devSecretPath, loadOrCreateDevSecret } from './devSecret.js';

/**
 * `npm start`: config → database (MONGODB_URI, else the local development database under
 * DATA_DIR) → buildApp → listen. SIGTERM/SIGINT (and an uncaught error) stop accepting
 * connections, let in-flight requests finish (bounded by SHUTDOWN_TIMEOUT_MS), close the
 * database, and exit (0 after a signal).
 */

/** The development database launcher (tools/dev-database), as far as the server needs to know it. */
interface DevelopmentDatabaseModule {
  startDevelopmentDatabase(opts: { dataDir: string, port: number, log: (line: string) => void }): Promise<{ uri: string, stop(): Promise<void> }>;
}

interface Database {
  uri: string;
  kind: 'env' | 'local-h2';
  stop(): Promise<void>;
}

const say = (line: string): void => { process.stderr.write(`${line}\n`); };

function configOrExit (): AppConfig {
  try {
    return loadConfig(process.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    say(`configuration error: ${err.message}`);
    process.exit(2);
  }
}

/**
 * MONGODB_URI, else the local development database. Its launcher is development tooling outside
 * src/: reached only here, by a specifier the compiler does not follow, so the production image
 * (which has no tools/) does not carry it and refuses to start without MONGODB_URI instead.
 */
async function openDatabase (config: AppConfig): Promise<Database> {
  if (config.MONGODB_URI) return { uri: config.MONGODB_URI, kind: 'env', stop: async () => undefined };
  const launcher = '../tools/dev-database/index.js';
  let module: DevelopmentDatabaseModule;
  try {
    module = await import(launcher) as DevelopmentDatabaseModule;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    say('configuration error: MONGODB_URI is not set, and this installation has no local development database (tools/dev-database): set MONGODB_URI');
    process.exit(2);
  }
  const local = await module.startDevelopmentDatabase({ dataDir: config.DATA_DIR, port: config.LOCAL_DATABASE_PORT, log: say });
  return { ...local, kind: 'local-h2' };
}

/** The configured JWT key, else the development secret under DATA_DIR (created on first start). */
async function withAuthKey (config: AppConfig): Promise<{ config: AppConfig, note?: string }> {
  if (authKeyOf(config)) return { config };
  const { secret, created } = await loadOrCreateDevSecret(config.DATA_DIR);
  const note = `no AUTH_JWT_SECRET/AUTH_JWT_PUBLIC_KEY set: using the development secret ${created ? 'just created ' : ''}` +
    `in ${devSecretPath(config.DATA_DIR)}. Mint a token with: npm run token -- --role admin`;
  return { config: { ...config, AUTH_JWT_SECRET: secret }, note };
}

async function main (): Promise<void> {
  const configured = configOrExit();
  const { config: keyed, note } = await withAuthKey(configured);
  const database = await openDatabase(keyed);
  const app = await buildApp({ config: { ...keyed, MONGODB_URI: database.uri } });
  if (note) app.log.warn(note);

  closeWithGrace({
    delay: configured.SHUTDOWN_TIMEOUT_MS,
    logger: false,
    onTimeout: (delay) => { app.log.error({ timeoutMs: delay }, 'in-flight requests did not finish in time; exiting'); },
  }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'uncaught error: shutting down');
    else app.log.info({ signal }, 'shutting down: draining in-flight requests');
    await app.close();
    await database.stop();
  });

  try {
    await app.listen({ host: keyed.HOST, port: keyed.PORT, listenTextResolver: (address) => `listening on ${address} (database: ${database.kind})` });
  } catch (err) {
    app.log.fatal({ err }, 'could not listen');
    await database.stop();
    process.exit(1);
  }
}

await main();
