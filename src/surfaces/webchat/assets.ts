/**
 * The page's HTML and CSS. They live in a module (not loose files) so `tsc` carries them to
 * dist/ with the rest of the server. The page has no inline script or style: the CSP below
 * allows only this origin's script, style and connections.
 */

export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
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
<div class="app">
  <aside class="sidebar">
    <header class="brand">Agent Kourier</header>
    <form class="new-thread" id="new-thread" aria-label="New thread">
      <label for="new-binding">Agent</label>
      <select id="new-binding" required></select>
      <label for="new-text">First message</label>
      <textarea id="new-text" rows="3" placeholder="Ask the agent…" required></textarea>
      <button type="submit">Start thread</button>
    </form>
    <nav id="bindings" aria-label="Threads"></nav>
  </aside>
  <main class="thread" id="thread">
    <header class="thread-head" id="thread-head">Start a thread on the left.</header>
    <ol class="messages" id="messages" aria-live="polite"></ol>
    <form class="composer" id="composer" aria-label="Reply" hidden>
      <textarea id="composer-text" rows="2" placeholder="Reply… (Enter sends, Shift+Enter for a new line)" required></textarea>
      <button type="submit">Send</button>
    </form>
  </main>
</div>
<div class="status" id="status" role="status"></div>
</body>
</html>
`;

export const PAGE_CSS = `
:root { --bg: #f7f7f5; --panel: #fff; --line: #deded8; --ink: #1d1d1b; --muted: #6b6b66;
  --accent: #2457c5; --person: #e8effd; --broker: #fff5d6; --ok: #1f7a3a; --bad: #b3261e;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); }
.app { display: grid; grid-template-columns: 300px 1fr; height: 100vh; }
.sidebar { border-right: 1px solid var(--line); background: var(--panel); overflow-y: auto; padding: 12px; }
.brand { font-weight: 700; margin-bottom: 12px; }
.new-thread { display: grid; gap: 6px; margin-bottom: 16px; }
.new-thread label { font-size: 12px; color: var(--muted); }
textarea, select, input[type=text] { font: inherit; padding: 6px 8px; border: 1px solid var(--line);
  border-radius: 6px; width: 100%; background: #fff; color: inherit; }
button { font: inherit; padding: 6px 12px; border-radius: 6px; border: 1px solid var(--accent);
  background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: var(--accent); }
button:disabled { opacity: .5; cursor: default; }
.binding h2 { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin: 12px 0 4px; }
.binding ul { list-style: none; margin: 0; padding: 0; }
.binding a { display: block; padding: 6px 8px; border-radius: 6px; color: inherit; text-decoration: none;
  white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.binding a:hover { background: var(--bg); }
.binding a[aria-current=page] { background: var(--person); }
.binding .empty { color: var(--muted); font-size: 13px; padding: 4px 8px; }
.thread { display: flex; flex-direction: column; min-width: 0; height: 100vh; }
.thread-head { padding: 12px 16px; border-bottom: 1px solid var(--line); background: var(--panel); font-weight: 600; }
.messages { list-style: none; margin: 0; padding: 16px; overflow-y: auto; flex: 1; display: flex; flex-direction: column; gap: 10px; }
.msg { max-width: 860px; padding: 8px 12px; border-radius: 8px; background: var(--panel); border: 1px solid var(--line); }
.msg .who { font-size: 12px; color: var(--muted); margin-bottom: 2px; }
.msg .text { white-space: pre-wrap; overflow-wrap: anywhere; }
.msg.person { align-self: flex-end; background: var(--person); border-color: transparent; }
.msg.failed { border-color: var(--bad); }
.msg.notice { background: var(--broker); border-color: #eedc9a; font-size: 14px; }
.msg.answer.streaming .text::after { content: "▍"; color: var(--muted); animation: blink 1s steps(2) infinite; }
@keyframes blink { 50% { opacity: 0; } }
.msg.tool-step { font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; color: var(--muted); background: var(--bg); }
.msg.question, .msg.approval { border-color: var(--accent); }
.prompt { display: grid; gap: 8px; margin-top: 8px; }
.choices { display: flex; flex-wrap: wrap; gap: 6px; }
.tool { border: 1px solid var(--line); border-radius: 6px; padding: 8px; display: grid; gap: 6px; }
.tool .name { font-weight: 600; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
.tool pre { margin: 0; max-height: 240px; overflow: auto; background: var(--bg); padding: 6px; border-radius: 4px;
  font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
.tool .decide { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; }
.state { font-size: 13px; color: var(--muted); }
.state.approved { color: var(--ok); }
.state.denied { color: var(--bad); }
.composer { display: flex; gap: 8px; padding: 12px 16px; border-top: 1px solid var(--line); background: var(--panel); }
.composer textarea { flex: 1; resize: vertical; }
.status { position: fixed; bottom: 12px; right: 12px; max-width: 420px; }
.status:not(:empty) { background: var(--bad); color: #fff; padding: 8px 12px; border-radius: 6px; }
@media (max-width: 720px) { .app { grid-template-columns: 1fr; } .sidebar { max-height: 40vh; } }
`;
