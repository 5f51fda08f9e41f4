/** The OCI registry client (issue 21): implements ImageRegistry of src/domain/ports/registry.ts. */
export { RegistryClient } from './client.js';
export { isPublicAddress } from './addresses.js';

import type { AttestationRegistry } from '../../domain/ports/attestations.js';
import type { RegistrySettings } from '../../registryConfig.js';
import { RegistryClient as Client } from './client.js';

/**
 * Where the server attaches its attestations: undefined unless some registry of the configuration
 * allows writes (`attachAttestations: true`); then only to images of those hosts.
 */
export function attestationRegistryFrom (settings: RegistrySettings): (AttestationRegistry & { close(): void }) | undefined {
  if (![...settings.hosts.values()].some((h) => h.attachAttestations)) return undefined;
  const client = new Client(settings);
  return {
    attach: client.attach,
    allowsWrites: (registryHost) => settings.hosts.get(registryHost)?.attachAttestations === true,
    close: () => { client.close(); },
  };
}
