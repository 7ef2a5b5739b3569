import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * What every bench agent server shares: its A2A 1.0 card (JSON-RPC, streaming) and how it
 * listens on loopback for many held streams at once.
 */

/** The agent card of a bench agent named `name` serving JSON-RPC at `url`. */
export function benchCard(name: string, url: string): string {
  return JSON.stringify({
    name,
    description: name,
    version: '1.0.0',
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 's', name: 's', description: 's', tags: [] }],
  });
}

/**
 * Listens on a free loopback port with no request timeout cutting a held stream and a long
 * keep-alive, tracking its sockets in `sockets` (so close() can destroy them); resolves with the
 * JSON-RPC endpoint.
 */
export async function listenForStreams(server: Server, sockets: Set<Socket>): Promise<string> {
  server.requestTimeout = 0;
  server.keepAliveTimeout = 60_000;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, resolve));
  const { port } = server.address() as AddressInfo;
  return `http://127.0.0.1:${port}/a2a`;
}
