import type { AttestationSigner } from '../ports/signer.js';
import { canonicalJson } from './canonical.js';
import { envelopeDigest, IN_TOTO_PAYLOAD_TYPE, pae, type DsseEnvelope } from './dsse.js';

export interface SignedEnvelope {
  envelope: DsseEnvelope;
  /** sha256 hex of the envelope's canonical JSON (AttestationView.digest, the next link's previous). */
  digest: string;
  keyId: string;
}

/**
 * Signs a statement: the payload is the statement's canonical JSON (so the same statement always
 * has the same payload), base64 (standard, padded: cosign decodes it with Go's StdEncoding), and
 * the signature is over DSSE's PAE of the in-toto payload type and those bytes.
 */
export async function signStatement (statement: object, signer: AttestationSigner): Promise<SignedEnvelope> {
  const body = Buffer.from(canonicalJson(statement), 'utf8');
  const { keyId, signature } = await signer.sign(pae(IN_TOTO_PAYLOAD_TYPE, body));
  const envelope: DsseEnvelope = {
    payloadType: IN_TOTO_PAYLOAD_TYPE,
    payload: body.toString('base64'),
    signatures: [{ keyid: keyId, sig: Buffer.from(signature).toString('base64') }],
  };
  return { envelope, digest: envelopeDigest(envelope), keyId };
}
