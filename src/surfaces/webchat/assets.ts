/**
 * The page's HTML (its CSS is styles.ts). They live in modules (not loose files) so `tsc` carries
 * them to dist/ with the rest of the server. The page has no inline script or style: the CSP
 * below allows only this origin's script, style and connections, and with Trusted Types required
 * the browser itself refuses any HTML string put into the page (the script makes elements).
 */

export { PAGE_CSS } from './styles.js';

export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Agent Kourier</title>
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head>
<body>
<div class="app" id="app" data-screen="list">
  <aside class="sidebar" aria-label="Threads">
    <header class="brand">Agent Kourier</header>
    <form class="new-thread" id="new-thread" aria-label="New thread">
      <label for="new-binding">Agent</label>
      <select id="new-binding" required></select>
      <label for="new-text">First message</label>
      <textarea id="new-text" rows="3" placeholder="Ask the agent…" required></textarea>
      <button type="submit">Start thread</button>
    </form>
    <nav id="bindings" aria-label="Threads by agent"></nav>
  </aside>
  <main class="thread" id="thread">
    <header class="thread-head">
      <button type="button" class="back secondary" id="back">‹ Threads</button>
      <div class="thread-title" id="thread-head">No thread open. Start one, or pick one from the list.</div>
    </header>
    <ol class="messages" id="messages" aria-live="polite"></ol>
    <div class="activity" id="activity" hidden><span id="activity-text" role="status"></span><button type="button" class="stop secondary" id="stop" hidden>Stop</button></div>
    <form class="composer" id="composer" aria-label="Reply" hidden>
      <textarea id="composer-text" rows="2" placeholder="Reply… (Enter sends, Shift+Enter for a new line)" required></textarea>
      <button type="submit">Send</button>
    </form>
  </main>
</div>
<div class="status" id="status" role="alert"></div>
</body>
</html>
`;
