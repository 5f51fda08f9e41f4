import { rm } from 'node:fs/promises';
import closeWithGrace from 'close-with-grace';
import { buildApp, loggerOptions } from './app.js';
import { authKeyOf, ConfigError, loadConfig, type AppConfig } from './config.js';
import { devSecretPath, devSigningKeyPath, loadOrCreateDevSecret, loadOrCreateDevSigningKey } from './devSecret.js';
import { isAppError } from './errors.js';

/**
 * `npm start`: config → database (MONGODB_URI, else the local development database under
 * DATA_DIR) → buildApp → listen. SIGTERM/SIGINT (and an uncaught error) stop accepting
 * connections, let in-flight requests finish (bounded by SHUTDOWN_TIMEOUT_MS), close the
 * database, and exit (0 after a signal).
 *
 * A start that cannot succeed ends with ONE line on stderr and an exit code (docs/operations.md):
 * 2 = configuration error (a bad variable; no MONGODB_URI where there is no local development
 * database, as in the image), 3 = refused (DATA_DIR in use by another server, LOCAL_DATABASE_PORT
 * taken), 4 = the database refused: it failed the conformance check, run before listening, because it
 * would break a guarantee the service rests on (`database refused: <guarantee>: <what it did>`), 1 =
 * anything else that failed (the line says what).
 */

/** The development database launcher (tools/dev-database), as far as the server needs to know it. */
interface DevelopmentDatabaseModule {
  startDevelopmentDatabase(opts: { dataDir: string, port: number | undefined, log: (line: string) => void }): Promise<{ uri: string, stop(): Promise<void> }>;
  DevelopmentDatabaseRefusal: abstract new (...args: never[]) => Error;
}

interface Database {
  uri: string;
  kind: 'env' | 'local-h2';
  stop(): Promise<void>;
}

const EXIT_FAILED = 1;
const EXIT_CONFIGURATION = 2;
const EXIT_REFUSED = 3;
const EXIT_DATABASE_REFUSED = 4;

const say = (line: string): void => { process.stderr.write(`${line}\n`); };

/**
 * What the local development database says while the server starts is held back until the server
 * listens (then printed), so that a start that fails prints its one line only; its first build's
 * progress line is printed at once (it can take a while).
 */
const startupLines = { held: [] as string[], state: 'holding' as 'holding' | 'open' | 'muted' };
const databaseLog = (line: string): void => {
  if (startupLines.state === 'open' || (startupLines.state === 'holding' && line.startsWith('building '))) say(line);
  else if (startupLines.state === 'holding') startupLines.held.push(line);
};
/**
 * The server's own log (stdout) is held the same way: what it says before listening (the development
 * keys it uses, the database check) is printed once it listens, and not at all when the start fails.
 */
const heldLog = { lines: [] as string[] };
const logStream = {
  write (line: string): void {
    if (startupLines.state === 'open') process.stdout.write(line);
    else if (startupLines.state === 'holding') heldLog.lines.push(line);
  },
};
const releaseStartupLines = (state: 'open' | 'muted'): void => {
  const opening = state === 'open' && startupLines.state === 'holding';
  startupLines.state = state;
  if (opening) {
    for (const line of startupLines.held) say(line);
    for (const line of heldLog.lines) process.stdout.write(line);
  }
  startupLines.held = [];
  heldLog.lines = [];
};

function stop (code: number, line: string): never {
  releaseStartupLines('muted');
  say(line);
  process.exit(code);
}

const messageOf = (err: unknown): string => err instanceof Error ? err.message : String(err);

function configOrExit (): AppConfig {
  try {
    return loadConfig(process.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    stop(EXIT_CONFIGURATION, `configuration error: ${err.message}`);
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
    stop(EXIT_CONFIGURATION, 'configuration error: MONGODB_URI is not set, and this installation has no local development database ' +
      '(tools/dev-database): set MONGODB_URI (or MONGODB_URI_FILE)');
  }
  try {
    const local = await module.startDevelopmentDatabase({ dataDir: config.DATA_DIR, port: config.LOCAL_DATABASE_PORT, log: databaseLog });
    return { ...local, kind: 'local-h2' };
  } catch (err) {
    if (err instanceof module.DevelopmentDatabaseRefusal) stop(EXIT_REFUSED, `start-up refused: ${err.message}`);
    stop(EXIT_FAILED, `start-up failed: the local development database did not start: ${messageOf(err)}`);
  }
}

/** The configured JWT key, else the development secret under DATA_DIR (created on first start). */
async function withAuthKey (config: AppConfig): Promise<{ config: AppConfig, note?: string }> {
  if (authKeyOf(config)) return { config };
  let dev: { secret: string, created: boolean };
  try {
    dev = await loadOrCreateDevSecret(config.DATA_DIR);
  } catch (err) {
    stop(EXIT_FAILED, `start-up failed: no AUTH_JWT_SECRET/AUTH_JWT_PUBLIC_KEY set, and the development secret ${devSecretPath(config.DATA_DIR)} ` +
      `cannot be read or created (${(err as NodeJS.ErrnoException).code ?? messageOf(err)})`);
  }
  const note = `no AUTH_JWT_SECRET/AUTH_JWT_PUBLIC_KEY set: using the development secret ${dev.created ? 'just created ' : ''}` +
    `in ${devSecretPath(config.DATA_DIR)}. Mint a token with: npm run token -- --role admin`;
  return { config: { ...config, AUTH_JWT_SECRET: dev.secret }, note };
}

/** The configured attestation signing key, else the development key under DATA_DIR (created on first start). */
async function withSigningKey (config: AppConfig): Promise<{ config: AppConfig, note?: string, created?: string }> {
  if (config.ATTESTATION_SIGNING_KEY) return { config };
  let dev: { pem: string, created: boolean };
  try {
    dev = await loadOrCreateDevSigningKey(config.DATA_DIR);
  } catch (err) {
    stop(EXIT_FAILED, `start-up failed: no ATTESTATION_SIGNING_KEY set, and the development signing key ${devSigningKeyPath(config.DATA_DIR)} ` +
      `cannot be read or created (${(err as NodeJS.ErrnoException).code ?? messageOf(err)})`);
  }
  const note = `no ATTESTATION_SIGNING_KEY set: signing attestations with the development key ${dev.created ? 'just created ' : ''}` +
    `in ${devSigningKeyPath(config.DATA_DIR)}`;
  return { config: { ...config, ATTESTATION_SIGNING_KEY: dev.pem }, note, ...(dev.created ? { created: devSigningKeyPath(config.DATA_DIR) } : {}) };
}

async function main (): Promise<void> {
  const configured = configOrExit();
  // The database first: without one this installation can use, nothing else (no development secret) is written.
  const database = await openDatabase(configured);
  const { config: authKeyed, note } = await withAuthKey(configured);
  const { config: keyed, note: signingNote, created: createdKey } = await withSigningKey(authKeyed);
  const logger = { ...loggerOptions(keyed), stream: logStream };
  const app = await buildApp({ config: { ...keyed, MONGODB_URI: database.uri }, logger }).catch(async (err: unknown) => {
    // A value that passed the schema but cannot be used (a connection string the driver refuses, a key that is not one).
    if (!(err instanceof ConfigError)) throw err;
    releaseStartupLines('muted');
    await database.stop();
    // A refused start leaves nothing behind: the development signing key it just made goes again (it signed nothing).
    if (createdKey !== undefined) await rm(createdKey, { force: true });
    stop(EXIT_CONFIGURATION, `configuration error: ${err.message}`);
  });
  if (note) app.log.warn(note);
  if (signingNote) app.log.warn(signingNote);

  closeWithGrace({
    delay: configured.SHUTDOWN_TIMEOUT_MS,
    logger: false,
    onTimeout: (delay) => { app.log.error({ timeoutMs: delay }, 'in-flight requests did not finish in time; exiting'); },
  }, async ({ signal, err }) => {
    // Stop accepting connections before anything else, and before saying so: a client that
    // connects after the line below is refused. Left to app.close(), the listening socket stays
    // open while the preClose hooks run; a connection accepted then, whose request had not
    // arrived yet, is idle and gets reset when the socket closes (a reset the client cannot tell
    // from a crash). app.close() still waits for the connections in flight (Node's 'close').
    if (app.server.listening) app.server.close();
    if (err) app.log.error({ err }, 'uncaught error: shutting down');
    else app.log.info({ signal }, 'shutting down: draining in-flight requests');
    await app.close();
    await database.stop();
  });

  try {
    // Bound: the held lines first (the database's), then the listening line.
    let listening = '';
    const listeningLine = (address: string): string => {
      releaseStartupLines('open');
      listening = `listening on ${address} (database: ${database.kind})`;
      return listening;
    };
    await app.listen({ host: keyed.HOST, port: keyed.PORT, listenTextResolver: listeningLine });
    releaseStartupLines('open');
    // Where it listens is said at every log level but `silent` (with PORT=0 nothing else tells the port).
    if (!['trace', 'debug', 'info', 'silent'].includes(app.log.level)) app.log.child({}, { level: 'info' }).info(listening);
  } catch (err) {
    releaseStartupLines('muted');
    await database.stop();
    // The conformance check ran before listening (buildApp's onReady) and refused the database.
    if (isAppError(err) && err.code === 'database-refused') {
      stop(EXIT_DATABASE_REFUSED, `database refused: ${String(err.details['refused'])}: ${String(err.details['reason'])}`);
    }
    stop(EXIT_FAILED, `start-up failed: cannot listen on ${keyed.HOST}:${keyed.PORT} (${(err as NodeJS.ErrnoException).code ?? messageOf(err)})`);
  }
}

await main();
