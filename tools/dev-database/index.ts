// The local development database for `npm start` (DESIGN §2, step 3): mongo-java-server with its
// H2 backend, kept on disk under DATA_DIR. Development tooling: src/server.ts reaches it only when
// MONGODB_URI is unset, through a dynamic import, and the production image does not carry it.
import { createServer } from 'node:net';
import path from 'node:path';
import { startLocalMongo, type LogLine } from './localMongo.js';

export interface DevelopmentDatabase {
  uri: string
  /** Stops the database (h2 closes its file). */
  stop(): Promise<void>
}

export interface DevelopmentDatabaseOptions {
  dataDir: string
  /** The port to listen on; when taken, any free port (0: any free port). */
  port: number
  log: LogLine
}

export async function startDevelopmentDatabase ({ dataDir, port, log }: DevelopmentDatabaseOptions): Promise<DevelopmentDatabase> {
  const dataFile = path.resolve(dataDir, 'mongo-dev', 'data.mv');
  const chosen = port !== 0 && await portFree('127.0.0.1', port) ? port : 0;
  log(`database: no MONGODB_URI, starting the local development database (h2, ${dataFile})`);
  const local = await startLocalMongo({ backend: 'h2', dataFile, port: chosen, log });
  log(`database: local development database listening at ${local.uri}`);
  return { uri: local.uri, stop: local.stop };
}

/** A hint, not a reservation: another process may take the port in between, then start fails. */
function portFree (host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}
