import { createPublicKey, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalDigest, canonicalJson, decodeBase64, envelopeDigest, pae, sha256Hex } from '../../../../src/domain/attestation/index.js';

const bigIntToBase64Url = (n: bigint): string => Buffer.from(n.toString(16).padStart(64, '0'), 'hex').toString('base64url');

describe('canonical JSON (RFC 8785)', () => {
  it('writes the RFC\'s own example exactly (section 3.2.2: numbers, string escapes, literals, sorted keys)', () => {
    // The input of RFC 8785 §3.2.2, parsed by JSON.parse as any party would.
    const input = JSON.parse('{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],' +
      '"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}');
    expect(canonicalJson(input)).toBe('{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
      '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}');
  });

  it('sorts keys by UTF-16 code units, at every depth, whatever order they were written in', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'x' }, '\u20ac': 0, '\ud83d\ude00': 1, דּ: 2 }))
      .toBe('{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1,"\u20ac":0,"\ud83d\ude00":1,"\ufb33":2}');
    expect(canonicalDigest({ b: 1, a: 2 })).toBe(canonicalDigest({ a: 2, b: 1 }));
    expect(canonicalDigest({ a: 2, b: 1 })).toBe(sha256Hex('{"a":2,"b":1}'));
  });

  it('refuses what JSON cannot carry instead of digesting something else', () => {
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(/NaN/);
    expect(() => canonicalJson({ s: '\ud800' })).toThrow(/surrogate/);
    expect(() => canonicalJson(undefined)).toThrow(/no JSON form/);
  });
});

describe('DSSE', () => {
  it('PAE is the spec\'s, and the spec\'s own test vector (ECDSA P-256, raw r||s) verifies over it', () => {
    const body = Buffer.from('hello world');
    const encoded = pae('http://example.com/HelloWorld', body);
    expect(encoded.toString('utf8')).toBe('DSSEv1 29 http://example.com/HelloWorld 11 hello world');
    const key = createPublicKey({
      format: 'jwk',
      key: {
        kty: 'EC',
        crv: 'P-256',
        x: bigIntToBase64Url(46950820868899156662930047687818585632848591499744589407958293238635476079160n),
        y: bigIntToBase64Url(5640078356564379163099075877009565129882514886557779369047442380624545832820n),
      },
    });
    const sig = decodeBase64('A3JqsQGtVsJ2O2xqrI5IcnXip5GToJ3F+FnZ+O88SjtR6rDAajabZKciJTfUiHqJPcIAriEGAHTVeCUjW2JIZA==');
    expect(sig).toBeDefined();
    expect(verify('sha256', encoded, { key, dsaEncoding: 'ieee-p1363' }, sig!)).toBe(true);
    expect(verify('sha256', pae('http://example.com/HelloWorld', Buffer.from('hello worle')), { key, dsaEncoding: 'ieee-p1363' }, sig!)).toBe(false);
  });

  it('PAE counts bytes, not characters', () => {
    expect(pae('t/€', Buffer.from('ä', 'utf8')).toString('utf8')).toBe('DSSEv1 5 t/€ 2 ä');
  });

  it('base64: standard and URL-safe are both read (DSSE: verifiers MUST accept either); anything else is not base64', () => {
    const bytes = Buffer.from([0xfb, 0xff, 0xfe, 0x01]);
    expect(decodeBase64(bytes.toString('base64'))).toEqual(bytes);
    expect(decodeBase64(bytes.toString('base64url'))).toEqual(bytes);
    expect(decodeBase64('a$bc')).toBeUndefined();
    expect(decodeBase64('abcde')).toBeUndefined();
  });

  it('an envelope\'s digest is the sha256 of its canonical JSON', () => {
    const envelope = { payloadType: 'application/vnd.in-toto+json', payload: 'e30=', signatures: [{ keyid: 'k', sig: 'c2ln' }] };
    const canonical = '{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"keyid":"k","sig":"c2ln"}]}';
    expect(envelopeDigest(envelope)).toBe(sha256Hex(canonical));
  });
});
