export { attestationSignerFrom, ConfiguredAttestationSigner } from './keyStore.js';
