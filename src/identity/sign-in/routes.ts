import type { IncomingMessage, ServerResponse } from 'node:http';
import { CALLBACK_PATH, SIGN_IN_PATH, type SignIn } from './sign-in.js';

/**
 * The sign-in's two pages on the broker's public port: the link a person follows (a redirect to
 * the identity provider) and the provider's redirect back (a short page saying what happened).
 * Only GETs; nothing is cached, nothing is sent as a referrer, and the pages run no script.
 */
export function signInRoutes(signIn: SignIn): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    if (req.method !== 'GET') return false;
    const url = new URL(req.url ?? '/', 'http://broker.invalid');
    if (url.pathname === SIGN_IN_PATH) {
      void signIn
        .begin(url.searchParams.get('s') ?? '')
        .then((begun) => {
          if (begun.ok) {
            res.writeHead(302, { location: begun.location, ...PAGE_HEADERS });
            res.end();
          } else page(res, begun.status, 'Sign-in not started', begun.reason);
        })
        .catch(() =>
          page(
            res,
            502,
            'Sign-in not started',
            'The identity provider could not be reached. Try again in a minute.',
          ),
        );
      return true;
    }
    if (url.pathname === CALLBACK_PATH) {
      const error = url.searchParams.get('error');
      if (error !== null) {
        const code = /^[\x21-\x7e]{1,64}$/.test(error) ? error : 'refused';
        page(
          res,
          400,
          'Not signed in',
          `The identity provider did not sign you in (${code}). Your message stays held; follow the link again.`,
        );
        return true;
      }
      void signIn
        .complete(url.searchParams.get('code') ?? '', url.searchParams.get('state') ?? '')
        .then((done) =>
          done.ok
            ? page(
                res,
                200,
                'Signed in',
                `You are signed in as ${done.email} for ${done.agent}. Your message is on its way; you can close this tab.`,
              )
            : page(res, done.status, 'Not signed in', done.reason),
        )
        .catch(() =>
          page(res, 500, 'Not signed in', 'The sign-in could not be saved. Follow the link again.'),
        );
      return true;
    }
    return false;
  };
}

const PAGE_HEADERS = {
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
  'x-content-type-options': 'nosniff',
};

function page(res: ServerResponse, status: number, title: string, text: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...PAGE_HEADERS });
  res.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>` +
      '<meta name="viewport" content="width=device-width"></head>' +
      `<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto"><h1>${escapeHtml(title)}</h1>` +
      `<p id="outcome">${escapeHtml(text)}</p></body></html>`,
  );
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
