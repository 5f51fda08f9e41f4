// Which MongoDB the tests use (docs/architecture.md "The local development database"): MONGODB_URI, else testcontainers when a Docker engine
// answers, else the local development database (in memory).
import { request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startLocalMongo, type LogLine } from '../../tools/dev-database/localMongo.js';

export interface ResolvedDatabase {
  uri: string
  kind: 'env' | 'testcontainers' | 'local-memory'
  /** Stops what was started for this run; a no-op for MONGODB_URI. */
  stop(): Promise<void>
}

type DockerEndpoint = { socketPath: string } | { host: string, port: number };

/**
 * True when a Docker engine answers GET /_ping within timeoutMs. Looks where testcontainers looks:
 * DOCKER_HOST (unix:// or tcp://), else the usual root and rootless sockets. A plain socket check is
 * not enough: the docker CLI and a stale socket file can exist without a daemon behind them.
 */
export async function dockerAnswers (timeoutMs = 2000): Promise<boolean> {
  const endpoints = dockerEndpoints();
  const answers = await Promise.all(endpoints.map(async (endpoint) => await pings(endpoint, timeoutMs)));
  return answers.includes(true);
}

function dockerEndpoints (): DockerEndpoint[] {
  const dockerHost = process.env.DOCKER_HOST;
  if (dockerHost !== undefined && dockerHost !== '') {
    if (dockerHost.startsWith('unix://')) return [{ socketPath: dockerHost.slice('unix://'.length) }];
    if (dockerHost.startsWith('tcp://')) {
      const url = new URL(dockerHost.replace(/^tcp:/, 'http:'));
      return [{ host: url.hostname, port: Number(url.port || 2375) }];
    }
    return []; // npipe:// and ssh:// are not this project's platforms
  }
  const candidates = ['/var/run/docker.sock', path.join(os.homedir(), '.docker', 'run', 'docker.sock')];
  const runtimeDir = process.env.XDG_RUNTIME_DIR;
  if (runtimeDir !== undefined && runtimeDir !== '') candidates.push(path.join(runtimeDir, 'docker.sock'));
  return candidates.map((socketPath) => ({ socketPath }));
}

function pings (endpoint: DockerEndpoint, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ ...endpoint, path: '/_ping', method: 'GET', timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    // `timeout` only covers idleness; this bounds connect + answer together.
    const timer = setTimeout(() => req.destroy(), timeoutMs);
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.on('close', () => {
      clearTimeout(timer);
      resolve(false); // no-op when already resolved with the answer
    });
    req.end();
  });
}

export async function resolveTestDatabase (log: LogLine): Promise<ResolvedDatabase> {
  const fromEnv = process.env.MONGODB_URI;
  if (fromEnv !== undefined && fromEnv !== '') {
    log('test database: MONGODB_URI');
    return { uri: fromEnv, kind: 'env', stop: async () => {} };
  }
  if (await dockerAnswers()) {
    log('test database: Docker answers, starting mongo:7 with testcontainers');
    const { MongoDBContainer } = await import('@testcontainers/mongodb');
    const container = await new MongoDBContainer('mongo:7').start();
    // A single-node replica set announces its container hostname; talk to the mapped port directly.
    return {
      uri: `${container.getConnectionString()}/?directConnection=true`,
      kind: 'testcontainers',
      stop: async () => { await container.stop(); }
    };
  }
  log('test database: no MONGODB_URI and no Docker, starting the local development database (memory)');
  const local = await startLocalMongo({ backend: 'memory', port: 0, log });
  return { uri: local.uri, kind: 'local-memory', stop: local.stop };
}
