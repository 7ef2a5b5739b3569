import type { AgentCard } from '@a2a-js/sdk';
import { HITL_URI } from './scenarios.js';

/** The demo agent's card: A2A 1.0 over JSON-RPC, streaming, kagent's HITL extension offered. */
export function demoCard(endpoint: string): AgentCard {
  return {
    name: 'Agent Kourier demo agent',
    description:
      'A scripted agent that shows every path of the broker: streaming, questions, approvals, tool steps, failures.',
    version: '1.0.0',
    supportedInterfaces: [{ url: endpoint, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    documentationUrl: '',
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extensions: [
        {
          uri: HITL_URI,
          description: 'Human in the loop: tool approvals',
          required: false,
          params: undefined,
        },
      ],
      extendedAgentCard: false,
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'demo',
        name: 'Demo',
        description: 'Say anything; or "ask", "approve", "fail", "long".',
        tags: ['demo'],
        examples: ['hello', 'ask me something', 'approve a deploy', 'fail please', 'a long answer'],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
    iconUrl: '',
  };
}
