/**
 * The page's stylesheet. Two layouts: side by side from 721 px, and on a narrower screen (a
 * phone) one screen at a time — the thread list (with "Start thread") first, the open thread with
 * a way back — chosen by `data-screen` on `.app`. Nothing may be wider than the screen: code
 * blocks and tables scroll inside their own boxes, long words and addresses wrap.
 */

export const PAGE_CSS = `
:root { --bg: #f7f7f5; --panel: #fff; --line: #deded8; --ink: #1d1d1b; --muted: #6b6b66;
  --accent: #2457c5; --person: #e8effd; --broker: #fff5d6; --ok: #1f7a3a; --bad: #b3261e;
  --code: #f0f0ec; --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
html, body { margin: 0; height: 100%; overflow: hidden; }
body { background: var(--bg); }
.app { display: grid; grid-template-columns: 300px minmax(0, 1fr); height: 100vh; height: 100dvh; }
.sidebar { border-right: 1px solid var(--line); background: var(--panel); overflow-y: auto; padding: 12px; min-width: 0; }
.brand { font-weight: 700; margin-bottom: 12px; }
.new-thread { display: grid; gap: 6px; margin-bottom: 16px; }
.new-thread label { font-size: 12px; color: var(--muted); }
textarea, select, input[type=text] { font: inherit; padding: 6px 8px; border: 1px solid var(--line);
  border-radius: 6px; width: 100%; max-width: 100%; background: #fff; color: inherit; }
button { font: inherit; padding: 6px 12px; border-radius: 6px; border: 1px solid var(--accent);
  background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: var(--accent); }
button:disabled { opacity: .5; cursor: default; }
.binding h2 { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin: 12px 0 4px;
  overflow-wrap: anywhere; }
.binding ul { list-style: none; margin: 0; padding: 0; }
.binding a { display: flex; gap: 8px; align-items: baseline; padding: 6px 8px; border-radius: 6px; color: inherit;
  text-decoration: none; }
.binding a .title { flex: 1; min-width: 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.binding a time { font-size: 12px; color: var(--muted); flex: none; }
.binding a.running .title::before { content: "● "; color: var(--accent); }
.binding a:hover { background: var(--bg); }
.binding a[aria-current=page] { background: var(--person); }
.binding .empty { color: var(--muted); font-size: 13px; padding: 4px 8px; }
.binding .not-ready { color: var(--danger, #b42318); font-size: 12px; margin: 0 8px 4px; overflow-wrap: anywhere; }
.thread { display: flex; flex-direction: column; min-width: 0; min-height: 0; height: 100%; }
.thread-head { display: flex; gap: 10px; align-items: center; padding: 10px 16px; border-bottom: 1px solid var(--line);
  background: var(--panel); font-weight: 600; min-width: 0; }
.thread-title { min-width: 0; flex: 1; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.thread-head .back { display: none; padding: 4px 10px; flex: none; }
.thread-head.reconnecting .thread-title::after { content: " · reconnecting…"; color: var(--bad); font-weight: 400; }
.messages { list-style: none; margin: 0; padding: 16px; overflow-y: auto; overflow-x: hidden; flex: 1; min-height: 0;
  display: flex; flex-direction: column; gap: 10px; }
.msg { max-width: min(860px, 100%); min-width: 0; padding: 8px 12px; border-radius: 8px; background: var(--panel);
  border: 1px solid var(--line); }
.msg .who { font-size: 12px; color: var(--muted); margin-bottom: 2px; }
.msg .text { white-space: pre-wrap; overflow-wrap: anywhere; }
.msg.person { align-self: flex-end; background: var(--person); border-color: transparent; }
.msg.failed { border-color: var(--bad); }
.msg.notice { background: var(--broker); border-color: #eedc9a; font-size: 14px; }
/* One caret on a streaming answer: after its plain text, or, when the text is Markdown (the same
   element is .text and .md), after its last block or in the still empty element. */
.msg.answer.streaming .text:not(.md)::after, .msg.answer.streaming .md:empty::after,
.msg.answer.streaming .md > :last-child::after { content: "▍"; color: var(--muted); animation: blink 1s steps(2) infinite; }
@keyframes blink { 50% { opacity: 0; } }
.msg.question, .msg.approval { border-color: var(--accent); }

/* The agent's Markdown (markdown.ts makes only these elements). */
.md { white-space: normal; }
.md > :first-child { margin-top: 0; }
.md > :last-child { margin-bottom: 0; }
.md p, .md ul, .md ol, .md blockquote, .md pre, .md .table-wrap { margin: 0 0 8px; }
.md ul, .md ol { padding-left: 22px; }
.md h1, .md h2, .md h3, .md h4, .md h5, .md h6 { margin: 10px 0 6px; line-height: 1.25; }
.md h1 { font-size: 1.3em; } .md h2 { font-size: 1.2em; } .md h3 { font-size: 1.1em; }
.md h4, .md h5, .md h6 { font-size: 1em; }
.md blockquote { border-left: 3px solid var(--line); padding-left: 10px; color: var(--muted); }
.md code { font: .9em/1.4 var(--mono); background: var(--code); padding: 1px 4px; border-radius: 4px; }
.md pre { background: var(--code); padding: 8px 10px; border-radius: 6px; overflow-x: auto; max-width: 100%; }
.md pre code { background: none; padding: 0; white-space: pre; display: block; }
.md pre[data-lang]::before { content: attr(data-lang); display: block; font: 11px var(--mono); color: var(--muted);
  margin-bottom: 4px; }
.md a { color: var(--accent); overflow-wrap: anywhere; }
.md .link-target { color: var(--muted); font-size: .9em; overflow-wrap: anywhere; }
.md hr { border: 0; border-top: 1px solid var(--line); margin: 10px 0; }
.md .table-wrap { overflow-x: auto; max-width: 100%; }
.md table { border-collapse: collapse; font-size: 14px; }
.md th, .md td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top;
  overflow-wrap: normal; }
.md th { background: var(--bg); }
.md .align-center { text-align: center; } .md .align-right { text-align: right; }

.msg.tool-step { background: var(--bg); font-size: 13px; }
.step-head .name { font: 600 13px var(--mono); }
.step .args, .tool pre { margin: 4px 0 0; max-height: 240px; overflow: auto; background: var(--code); padding: 6px 8px;
  border-radius: 4px; font: 12px/1.4 var(--mono); white-space: pre-wrap; overflow-wrap: anywhere; }
.prompt { display: grid; gap: 8px; margin-top: 8px; min-width: 0; }
.choices { display: flex; flex-wrap: wrap; gap: 6px; }
fieldset { min-width: 0; }
.tool { border: 1px solid var(--line); border-radius: 6px; padding: 8px; display: grid; gap: 6px; min-width: 0; }
.tool .name { font-weight: 600; font-family: var(--mono); overflow-wrap: anywhere; }
.tool .decide { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; }
.state { font-size: 13px; color: var(--muted); }
.state.approved { color: var(--ok); }
.state.denied { color: var(--bad); }
.activity { display: flex; gap: 8px; align-items: center; padding: 6px 16px; font-size: 13px; color: var(--muted);
  border-top: 1px solid var(--line); background: var(--panel); }
.activity::before { content: ""; width: 10px; height: 10px; border-radius: 50%; flex: none;
  border: 2px solid var(--accent); border-right-color: transparent; animation: spin 1s linear infinite; }
@keyframes spin { to { transform: rotate(360deg); } }
.activity .stop { margin-left: auto; padding: 2px 12px; font-size: 13px; }
.composer { display: flex; gap: 8px; padding: 12px 16px; border-top: 1px solid var(--line); background: var(--panel); }
.composer textarea { flex: 1; min-width: 0; resize: vertical; }
.status { position: fixed; bottom: 12px; right: 12px; max-width: min(420px, calc(100vw - 24px)); }
.status:not(:empty) { background: var(--bad); color: #fff; padding: 8px 12px; border-radius: 6px; }

@media (max-width: 720px) {
  .app { grid-template-columns: minmax(0, 1fr); }
  .app[data-screen=list] .thread { display: none; }
  .app[data-screen=thread] .sidebar { display: none; }
  .sidebar { border-right: 0; }
  .thread-head { padding: 8px 10px; }
  .thread-head .back { display: block; }
  .messages { padding: 10px; }
  .msg { max-width: 100%; }
  .msg.person { margin-left: 24px; }
  .composer { padding: 8px 10px; }
  .composer textarea { resize: none; }
  .activity { padding: 6px 10px; }
}
`;
