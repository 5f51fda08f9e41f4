/** The OCI registry client (issue 21): implements ImageRegistry of src/domain/ports/registry.ts. */
export { RegistryClient } from './client.js';
export { isPublicAddress } from './addresses.js';
