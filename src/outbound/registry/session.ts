import type { RegistryHostSettings, RegistrySettings } from '../../registryConfig.js';
import { errors, type AppError } from '../../errors.js';
import { rulesOf, Transport, TransportError, type Answer, type Exchange, type TransportRules } from './transport.js';

/**
 * Requests to one registry host with its credentials (distribution spec auth): a fixed bearer
 * token is sent as is; otherwise a 401 challenge is answered once — `Basic` with the configured
 * username and password, `Bearer realm=…,service=…,scope=…` by asking the token service for a token
 * for the request's scope (with the basic credentials when configured, anonymously otherwise),
 * kept until it expires. Redirects are followed on the same origin, or to a configured redirect host
 * over https without credentials; never elsewhere. Everything that is not an answer becomes
 * `registry-unavailable` naming the host.
 */

const MAX_REDIRECTS = 3;
const TOKEN_BODY_LIMIT = 64 * 1024;
const TOKEN_CACHE_LIMIT = 1_000;

interface Challenge { scheme: string, params: Record<string, string> }

export function parseChallenge (header: string | string[] | undefined): Challenge | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const match = value === undefined ? null : /^\s*([A-Za-z]+)\s*(.*)$/s.exec(value);
  if (match?.[1] === undefined) return undefined;
  const params: Record<string, string> = {};
  for (const param of (match[2] ?? '').matchAll(/([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g)) {
    if (param[1] !== undefined) params[param[1].toLowerCase()] = (param[2] ?? param[3] ?? '').replace(/\\(.)/g, '$1');
  }
  return { scheme: match[1].toLowerCase(), params };
}

export interface RegistryRequest extends Omit<Exchange, 'url'> {
  /** Path and query on the endpoint, e.g. `/v2/acme/shop/manifests/sha256:…`. */
  path: string;
  /** `repository:<name>:pull` or `…:pull,push`. */
  scope: string;
}

export class RegistrySession {
  private readonly tokens = new Map<string, { authorization: string, expiresAt: number }>();
  /** Token requests in flight: the parallel first requests of a fetch share one. */
  private readonly pending = new Map<string, Promise<string | undefined>>();

  constructor (readonly settings: RegistrySettings, private readonly transport = new Transport()) {}

  /** The host's settings: configured, else anonymous https to a public address. */
  hostFor (registryHost: string): RegistryHostSettings {
    return this.settings.hosts.get(registryHost) ?? {
      host: registryHost,
      endpoint: new URL(`https://${registryHost}`),
      credentials: { kind: 'anonymous' },
      configured: false,
      attachAttestations: false,
      redirectHosts: [],
      ...this.settings.unlisted,
    };
  }

  async request (host: RegistryHostSettings, request: RegistryRequest): Promise<Answer> {
    const cached = this.tokens.get(`${host.host}|${request.scope}`);
    let authorization = host.credentials.kind === 'bearer'
      ? `Bearer ${host.credentials.token}`
      : cached !== undefined && cached.expiresAt > Date.now() ? cached.authorization : undefined;
    let answer = await this.follow(host, request, authorization);
    if (answer.status === 401 && host.credentials.kind !== 'bearer') {
      // The token sent was refused (revoked, expired early): never offer it again.
      if (authorization !== undefined && this.tokens.get(`${host.host}|${request.scope}`)?.authorization === authorization) {
        this.tokens.delete(`${host.host}|${request.scope}`);
      }
      authorization = await this.authorizeOnce(host, request.scope, parseChallenge(answer.headers['www-authenticate']));
      if (authorization !== undefined) answer = await this.follow(host, request, authorization);
    }
    if (answer.status === 401 || answer.status === 403) {
      throw errors.registryUnavailable(host.host, 'denied', `refused the ${host.credentials.kind} credentials for ${request.scope} (HTTP ${answer.status})`);
    }
    if (answer.status >= 500 || answer.status === 429) {
      throw errors.registryUnavailable(host.host, 'server-error', `answered HTTP ${answer.status} to ${request.method} ${request.path.split('?')[0] ?? ''}`);
    }
    return answer;
  }

  /** One request and the redirects it may follow. */
  private async follow (host: RegistryHostSettings, request: RegistryRequest, authorization: string | undefined): Promise<Answer> {
    let url = new URL(request.path, host.endpoint);
    let rules = rulesOf(host);
    let auth = authorization;
    for (let hop = 0; ; hop += 1) {
      const answer = await this.send(host, { ...request, url, headers: { ...request.headers, ...(auth === undefined ? {} : { authorization: auth }) } }, rules);
      const location = answer.headers.location;
      if (answer.status < 300 || answer.status >= 400 || location === undefined || !['GET', 'HEAD'].includes(request.method)) return answer;
      if (hop >= MAX_REDIRECTS) throw errors.registryUnavailable(host.host, 'invalid-response', `redirected more than ${MAX_REDIRECTS} times`);
      const target = new URL(location, url);
      if (target.origin !== host.endpoint.origin) {
        if (target.protocol !== 'https:' || !host.redirectHosts.includes(target.host)) {
          throw errors.registryUnavailable(host.host, 'not-allowed', `redirected off the registry host, to ${target.host} (not among its redirectHosts)`);
        }
        // Off the host: no credentials, and only to public addresses.
        auth = undefined;
        rules = { connectTimeoutMs: rules.connectTimeoutMs, timeoutMs: rules.timeoutMs, anyAddress: false };
      }
      url = target;
    }
  }

  private async send (host: RegistryHostSettings, exchange: Exchange, rules: TransportRules): Promise<Answer> {
    try {
      return await this.transport.send(exchange, rules);
    } catch (err) {
      throw unavailable(host.host, err);
    }
  }

  private async authorizeOnce (host: RegistryHostSettings, scope: string, challenge: Challenge | undefined): Promise<string | undefined> {
    const key = `${host.host}|${scope}`;
    // A request that was already in flight when another one got the token uses that token.
    const cached = this.tokens.get(key);
    if (cached !== undefined && cached.expiresAt > Date.now() && challenge?.scheme === 'bearer') return cached.authorization;
    const running = this.pending.get(key);
    if (running !== undefined) return await running;
    const started = this.authorize(host, scope, challenge).finally(() => this.pending.delete(key));
    this.pending.set(key, started);
    return await started;
  }

  private async authorize (host: RegistryHostSettings, scope: string, challenge: Challenge | undefined): Promise<string | undefined> {
    const { credentials } = host;
    const basic = credentials.kind === 'basic' ? `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}` : undefined;
    if (challenge?.scheme === 'basic') return basic;
    if (challenge?.scheme !== 'bearer' || challenge.params['realm'] === undefined) return undefined;
    const realm = this.realmOf(host, challenge.params['realm']);
    if (challenge.params['service'] !== undefined) realm.url.searchParams.set('service', challenge.params['service']);
    realm.url.searchParams.set('scope', scope);
    const answer = await this.send(host, {
      method: 'GET', url: realm.url, maxBytes: TOKEN_BODY_LIMIT, headers: basic === undefined || !realm.withCredentials ? {} : { authorization: basic },
    }, realm.rules);
    if (answer.status === 401 || answer.status === 403) {
      throw errors.registryUnavailable(host.host, 'denied', `its token service refused the ${credentials.kind} credentials`);
    }
    const token = tokenOf(answer);
    if (token === undefined) {
      throw errors.registryUnavailable(host.host, 'invalid-response', `its token service answered HTTP ${answer.status} without a token`);
    }
    if (this.tokens.size >= TOKEN_CACHE_LIMIT) this.tokens.clear();
    const authorization = `Bearer ${token.value}`;
    // Kept a little shorter than the server says, so a token is never sent as it expires.
    this.tokens.set(`${host.host}|${scope}`, { authorization, expiresAt: Date.now() + Math.max(0, token.expiresInSeconds - 10) * 1000 });
    return authorization;
  }

  /**
   * A realm on the registry endpoint's own host inherits its rules (and gets the credentials); any
   * other realm must be https on a public address, and gets the credentials only over https.
   */
  private realmOf (host: RegistryHostSettings, realm: string): { url: URL, rules: TransportRules, withCredentials: boolean } {
    let url: URL;
    try {
      url = new URL(realm);
    } catch {
      throw errors.registryUnavailable(host.host, 'invalid-response', 'its token service realm is not a URL');
    }
    const sameHost = url.hostname === host.endpoint.hostname;
    if (url.protocol !== 'https:' && !(sameHost && url.protocol === host.endpoint.protocol)) {
      throw errors.registryUnavailable(host.host, 'not-allowed', `its token service realm ${url.origin} is not https`);
    }
    const rules = sameHost ? rulesOf(host) : { ...rulesOf(host), anyAddress: false };
    return { url, rules, withCredentials: sameHost || url.protocol === 'https:' };
  }

  close (): void {
    this.transport.close();
  }
}

function tokenOf (answer: Answer): { value: string, expiresInSeconds: number } | undefined {
  if (answer.status !== 200) return undefined;
  try {
    const body = JSON.parse(answer.body.toString('utf8')) as { token?: unknown, access_token?: unknown, expires_in?: unknown };
    const value = typeof body.token === 'string' && body.token !== '' ? body.token : typeof body.access_token === 'string' ? body.access_token : undefined;
    if (value === undefined || value === '' || /[\r\n]/.test(value)) return undefined;
    // The distribution spec: 60 s when the server does not say.
    const expiresInSeconds = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 60;
    return { value, expiresInSeconds };
  } catch {
    return undefined;
  }
}

export function unavailable (registryHost: string, err: unknown): AppError {
  if (err instanceof TransportError) {
    const reason = err.reason === 'too-large' ? 'too-large' : err.reason;
    return errors.registryUnavailable(registryHost, reason, err.message, err);
  }
  if (err instanceof Error && 'code' in err && (err as AppError).code === 'registry-unavailable') return err as AppError;
  return errors.registryUnavailable(registryHost, 'unreachable', err instanceof Error ? err.message : String(err), err);
}
