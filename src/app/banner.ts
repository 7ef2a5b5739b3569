/**
 * What `agentkourier local` (npm start) prints for the person at the terminal once it serves:
 * where the web chat is, where the demo agent is, and a `check` command to try against it, in
 * the form that runs from the project folder.
 */
export interface BannerInput {
  chatUrl: string;
  /** Whether the web chat needs a token (shown as a placeholder: the token itself is never printed). */
  tokenRequired?: boolean;
  /** The demo agent's base URL; undefined with --no-demo. */
  demoAgentUrl?: string;
}

/** The `check` command line against the demo agent (it is a kagent-v1 agent, demo/assistant). */
export function demoCheckCommand(demoAgentUrl: string): string {
  return `npx tsx src/main.ts check ${demoAgentUrl} --dialect kagent-v1 --agent demo/assistant --user-id local-user`;
}

export function localBanner(input: BannerInput): string[] {
  const lines = [
    '',
    'Agent Kourier local mode',
    `  web chat    open ${input.chatUrl}${input.tokenRequired === true ? '#token=<your token>' : ''}`,
  ];
  if (input.demoAgentUrl !== undefined) {
    lines.push(`  demo agent  ${input.demoAgentUrl} (kagent-v1, agent demo/assistant)`);
    lines.push(`  try         ${demoCheckCommand(input.demoAgentUrl)}`);
  }
  lines.push(`  metrics     ${input.chatUrl}metrics   (and /healthz, /readyz)`);
  lines.push('  stop        Ctrl-C', '');
  return lines;
}
