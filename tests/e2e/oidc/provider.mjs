// A real OpenID Connect provider for tests (node's oidc-provider), on loopback: Cortex is its
// resource server. Dynamic client registration, authorization code + PKCE, resource indicators
// (RFC 8707) giving JWT access tokens for the resource, refresh tokens, revocation. The user
// "alice" of org acme (project api) signs in and consents without a page: the interaction
// routes finish at once, as a person clicking "Allow" would.
//
// With FORMAT `opaque`, the access tokens for the resource are opaque, and Cortex checks them by
// introspection as the preset client `cortex` (secret INTROSPECTION_SECRET).
//
// Usage: node provider.mjs PORT RESOURCE [jwt|opaque]   (prints "listening <issuer>" when ready)
import http from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

const [port, resource, format = 'jwt'] = process.argv.slice(2);
export const INTROSPECTION_SECRET = 'cortex-introspection-secret';
const issuer = `http://127.0.0.1:${port}`;
const SCOPES = 'memory:read memory:write';

function signingKey(alg, kid) {
  const { privateKey } = alg === 'RS256'
    ? generateKeyPairSync('rsa', { modulusLength: 2048 })
    : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { ...privateKey.export({ format: 'jwk' }), alg, kid, use: 'sig' };
}

const provider = new Provider(issuer, {
  clients: [
    // Cortex itself, to introspect with: it never asks for tokens.
    { client_id: 'cortex', client_secret: INTROSPECTION_SECRET, grant_types: [], redirect_uris: [], response_types: [] },
  ],
  jwks: { keys: [signingKey('RS256', 'rs-1'), signingKey('ES256', 'es-1')] },
  scopes: ['openid', 'offline_access', 'memory:read', 'memory:write'],
  findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  // The tenant of the signed-in user, in every access token issued for the resource.
  extraTokenClaims: () => ({ org: 'acme', projects: ['api'] }),
  issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, indicator) => {
        if (indicator !== resource) throw new errors.InvalidTarget();
        return {
          scope: SCOPES,
          audience: resource,
          accessTokenTTL: 600,
          accessTokenFormat: format,
          jwt: { sign: { alg: 'ES256' } },
        };
      },
    },
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
});

// Sign-in and consent, granted at once: the flow around them is what the tests check.
async function interact(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    return provider.interactionFinished(req, res, { login: { accountId: 'alice' } }, { mergeWithLastSubmission: false });
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(prompt.details.missingResourceScopes || {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

const callback = provider.callback();
http
  .createServer((req, res) => {
    if (req.url.startsWith('/interaction/')) {
      interact(req, res).catch((e) => {
        res.statusCode = 500;
        res.end(String(e));
      });
    } else {
      callback(req, res);
    }
  })
  .listen(Number(port), '127.0.0.1', () => console.log(`listening ${issuer}`));
