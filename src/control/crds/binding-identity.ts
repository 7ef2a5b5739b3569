import { z } from 'zod';
import { withRules } from './cel.js';
import { secretKeyRef } from './common.js';

/**
 * A Binding's `spec.identity`: what every request to its agent carries (a token, kagent's user
 * id, or a per-person assertion, exchanged or signed in for; docs/identity.md). Apart from
 * binding.ts for its size; the CRD is generated from binding.ts, which uses it.
 */

export const identity = withRules(
  z
    .object({
      tokenSecretRef: secretKeyRef.optional().meta({
        description: 'Sent as Authorization: Bearer <token>, the token read from this Secret key.',
      }),
      userId: z
        .string()
        .min(1)
        .max(256)
        // biome-ignore lint/suspicious/noControlCharactersInRegex: the NUL is what it refuses; \x00 also reads the same in Go's RE2, which checks this pattern in the API server
        .regex(/^[^\r\n\x00]+$/, 'must not contain a line break or NUL')
        .optional()
        .meta({ description: 'Sent as X-User-Id: <userId> (kagent’s identity header).' }),
      perPerson: withRules(
        z.object({
          header: z
            .string()
            .max(64)
            .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name')
            .optional()
            .meta({
              description:
                'The header the assertion goes in (default Authorization, as a bearer token); name another when the agent uses Authorization for something else.',
            }),
          audience: z.string().min(1).max(512).optional().meta({
            description:
              'The assertion’s aud claim (default: the AgentBackend’s url; with exchange, the token endpoint’s url).',
          }),
          exchange: z
            .object({
              tokenUrl: z
                .string()
                .max(2048)
                .regex(/^https?:\/\/[^\s]+$/, 'must be an http(s) URL')
                .meta({ description: 'The identity provider’s token endpoint.' }),
              clientId: z
                .string()
                .min(1)
                .max(256)
                .meta({ description: 'The broker’s client at the provider.' }),
              clientSecretRef: secretKeyRef.meta({
                description:
                  'The client’s secret (sent with HTTP Basic authentication), from this Secret key.',
              }),
              audience: z.string().min(1).max(512).optional().meta({
                description:
                  'The audience asked for the access token (RFC 8693 audience): what the agent checks.',
              }),
              scope: z.string().min(1).max(1024).optional().meta({
                description: 'The scope asked for the access token, space separated.',
              }),
            })
            .optional()
            .meta({
              description:
                'Exchange the assertion at the identity provider (OAuth 2.0 Token Exchange, RFC 8693) and send the person’s access token instead; kept per person until shortly before it expires (docs/identity.md).',
            }),
          signIn: z
            .object({
              issuer: z
                .string()
                .max(2048)
                .regex(/^https?:\/\/[^\s]+$/, 'must be an http(s) URL')
                .meta({
                  description: 'The identity provider’s issuer (its discovery document is read below it).',
                }),
              clientId: z
                .string()
                .min(1)
                .max(256)
                .meta({ description: 'The broker’s client at the provider.' }),
              clientSecretRef: secretKeyRef.optional().meta({
                description:
                  'A confidential client’s secret (sent with HTTP Basic); unset: a public client, PKCE only.',
              }),
              scope: z.string().min(1).max(1024).optional().meta({
                description:
                  'The scope asked for (default "openid email offline_access"); must include openid and offline_access.',
              }),
              emailClaim: z.string().min(1).max(256).optional().meta({
                description: 'The ID token claim that must equal the chat profile’s email (default email).',
              }),
            })
            .optional()
            .meta({
              description:
                'Each person signs in once at the identity provider (authorization code with PKCE; the provider’s email must be the chat profile’s); their messages are held until they have, then sent with their own access token (docs/identity.md).',
            }),
        }),
        [
          {
            cel: '!(has(self.exchange) && has(self.signIn))',
            message: 'at most one of exchange and signIn may be set',
            check: (p) => p.exchange === undefined || p.signIn === undefined,
          },
        ],
      )
        .meta({
          description:
            'Every call carries a short JWT the broker signs naming the person who asks (docs/identity.md); with the kagent-v1 dialect, X-User-Id names them too. With exchange or signIn, the person’s own token from the identity provider instead.',
        })
        .optional(),
    })
    .meta({ description: 'The identity every request to the agent carries.' }),
  [
    {
      cel: '(has(self.tokenSecretRef) ? 1 : 0) + (has(self.userId) ? 1 : 0) + (has(self.perPerson) ? 1 : 0) == 1',
      message: 'exactly one of tokenSecretRef, userId and perPerson must be set',
      check: (i) => [i.tokenSecretRef, i.userId, i.perPerson].filter((v) => v !== undefined).length === 1,
    },
  ],
);
