import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyAttestationView, verifyChain } from '../../../src/domain/attestation/index.js';
import { attestationExample } from '../../support/attestationExample.js';
import { trustedKeys } from '../../support/attestations.js';

/**
 * docs/attestations.md shows real output of the code: every block marked `<!-- generated: NAME -->`
 * and the files of docs/examples/attestation/ are what test/support/attestationExample.ts makes
 * (deterministic: a fixed Ed25519 key, fixed inputs). After a change of the format, rewrite them with
 * `UPDATE_DOCS=1 npx vitest run test/unit/docs/attestationsExample.test.ts`.
 */
const root = join(import.meta.dirname, '..', '..', '..');
const docPath = join(root, 'docs', 'attestations.md');
const examples = join(root, 'docs', 'examples', 'attestation');
const update = process.env['UPDATE_DOCS'] === '1';

const pretty = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

async function generated (): Promise<{ blocks: Record<string, string>, files: Record<string, string> }> {
  const x = await attestationExample();
  return {
    blocks: {
      'runtime-statement': pretty(x.runtime),
      'runtime-envelope': pretty(x.signed.envelope),
      'svr-statement': pretty(x.svr),
      'revocation-statement': pretty(x.revocation),
      'key-id': `${x.signer.activeKey.keyId}\n`,
      'runtime-digest': `${x.signed.digest}\n`,
    },
    files: {
      'example.pub': x.signer.activeKey.publicKeyPem,
      'runtime-verification.json': pretty(x.runtimeView),
      'revocation.json': pretty(x.revocationView),
      'runtime-envelope.json': pretty(x.signed.envelope),
    },
  };
}

const blockPattern = (name: string): RegExp => new RegExp(`(<!-- generated: ${name} -->\\n\`\`\`\\w*\\n)([\\s\\S]*?)(\`\`\`)`);

describe('docs/attestations.md', () => {
  it('shows exactly what the code makes (blocks and example files)', async () => {
    const { blocks, files } = await generated();
    let doc = readFileSync(docPath, 'utf8');
    for (const [name, text] of Object.entries(blocks)) {
      const pattern = blockPattern(name);
      expect(doc, `docs/attestations.md has no block <!-- generated: ${name} -->`).toMatch(pattern);
      if (update) doc = doc.replace(pattern, (_, open: string, __: string, close: string) => `${open}${text}${close}`);
      else expect(pattern.exec(doc)?.[2], `block ${name}`).toBe(text);
    }
    if (update) writeFileSync(docPath, doc);
    for (const [name, text] of Object.entries(files)) {
      if (update) writeFileSync(join(examples, name), text);
      else expect(readFileSync(join(examples, name), 'utf8'), `docs/examples/attestation/${name}`).toBe(text);
    }
  });

  it('the example files verify with the example key, and the revocation links to the attestation', () => {
    const keys = trustedKeys(readFileSync(join(examples, 'example.pub'), 'utf8'));
    const runtime = verifyAttestationView(JSON.parse(readFileSync(join(examples, 'runtime-verification.json'), 'utf8')), { keys });
    const revocation = verifyAttestationView(JSON.parse(readFileSync(join(examples, 'revocation.json'), 'utf8')), { keys });
    if (!runtime.ok || !revocation.ok) throw new Error(JSON.stringify([runtime, revocation]));
    const member = (a: typeof runtime.value.attestation) => ({ envelopeDigest: a.envelopeDigest, chain: a.chain!, serviceId: a.serviceId! });
    expect(verifyChain([member(runtime.value.attestation), member(revocation.value.attestation)])).toEqual({ ok: true, value: true });
  });
});
