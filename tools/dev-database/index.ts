// The local development database for `npm start` (docs/architecture.md "The local development database"): mongo-java-server with its
// H2 backend, kept on disk under DATA_DIR. Development tooling: src/server.ts reaches it only when
// MONGODB_URI is unset, through a dynamic import, and the production image does not carry it.
import { createServer } from 'node:net';
import path from 'node:path';
import { LocalMongoRefusal, startLocalMongo, type LogLine } from './localMongo.js';

/** The port `npm start` asks for when LOCAL_DATABASE_PORT is unset (stable for a developer's shell). */
export const PREFERRED_PORT = 27027;

export interface DevelopmentDatabase {
  uri: string
  /** Stops the database (h2 closes its file). */
  stop(): Promise<void>
}

export interface DevelopmentDatabaseOptions {
  dataDir: string
  /**
   * LOCAL_DATABASE_PORT: exactly this port (0 = any free port), refused when it is taken.
   * Undefined: PREFERRED_PORT when free, else any free port.
   */
  port: number | undefined
  log: LogLine
}

/**
 * A start the operator must resolve, not a bug: another server on the same DATA_DIR, or the
 * configured port taken. `message` is one line that says what to do; src/server.ts prints it alone.
 */
export class DevelopmentDatabaseRefusal extends Error {
  constructor (message: string) {
    super(message);
    this.name = 'DevelopmentDatabaseRefusal';
  }
}

export async function startDevelopmentDatabase ({ dataDir, port, log }: DevelopmentDatabaseOptions): Promise<DevelopmentDatabase> {
  const dataFile = path.resolve(dataDir, 'mongo-dev', 'data.mv');
  const chosen = port ?? (await portFree('127.0.0.1', PREFERRED_PORT) ? PREFERRED_PORT : 0);
  let local;
  try {
    local = await startLocalMongo({ backend: 'h2', dataFile, port: chosen, log });
  } catch (err) {
    throw refusalOf(err, dataDir, port) ?? err;
  }
  log(`database: no MONGODB_URI, so the local development database (h2, ${dataFile}) at ${local.uri}`);
  return { uri: local.uri, stop: local.stop };
}

function refusalOf (err: unknown, dataDir: string, port: number | undefined): DevelopmentDatabaseRefusal | undefined {
  if (!(err instanceof LocalMongoRefusal)) return undefined;
  if (err.reason === 'locked') {
    return new DevelopmentDatabaseRefusal(`DATA_DIR ${path.resolve(dataDir)} is in use by another server ` +
      `(its local development database holds the lock on ${err.subject}): stop that server, or start this one with another DATA_DIR or with MONGODB_URI`);
  }
  // Without LOCAL_DATABASE_PORT the preferred port was free a moment ago and taken in between.
  const variable = port === undefined ? `port ${PREFERRED_PORT}` : `LOCAL_DATABASE_PORT ${port}`;
  return new DevelopmentDatabaseRefusal(`${variable} is in use (${err.subject}): free it, or set LOCAL_DATABASE_PORT to another port (0 = any free port)`);
}

/** A hint, not a reservation: another process may take the port in between, then start is refused. */
function portFree (host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}
