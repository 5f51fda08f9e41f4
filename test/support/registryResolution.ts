// Which OCI registry the integration tests use (issue 21), resolved like the database
// (databaseResolution.ts): REGISTRY_URL, else Docker's registry:2 through testcontainers when a
// Docker engine answers, else the local test registry (tools/oci-registry: go-containerregistry's
// registry with the OCI 1.1 referrers API, built once with go and cached under .data/tools/).
import { startLocalRegistry, type LogLine } from '../../tools/oci-registry/launcher.js';
import { dockerAnswers } from './databaseResolution.js';

export interface ResolvedRegistry {
  /** `http://host:port`, no trailing slash. */
  url: string;
  kind: 'env' | 'testcontainers' | 'local';
  /** Stops what was started for this run; a no-op for REGISTRY_URL. */
  stop(): Promise<void>;
}

export async function resolveTestRegistry (log: LogLine): Promise<ResolvedRegistry> {
  const fromEnv = process.env.REGISTRY_URL;
  if (fromEnv !== undefined && fromEnv !== '') {
    log('test registry: REGISTRY_URL');
    return { url: fromEnv.replace(/\/+$/, ''), kind: 'env', stop: async () => {} };
  }
  if (await dockerAnswers()) {
    log('test registry: Docker answers, starting registry:2 with testcontainers');
    const { GenericContainer, Wait } = await import('testcontainers');
    const container = await new GenericContainer('registry:2').withExposedPorts(5000).withWaitStrategy(Wait.forHttp('/v2/', 5000)).start();
    return {
      url: `http://${container.getHost()}:${container.getMappedPort(5000)}`,
      kind: 'testcontainers',
      stop: async () => { await container.stop(); },
    };
  }
  log('test registry: no REGISTRY_URL and no Docker, starting the local test registry (tools/oci-registry)');
  const local = await startLocalRegistry({ log });
  return { url: local.url, kind: 'local', stop: local.stop };
}
