import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on loopback that the test controls, for network faults between the broker and a
 * peer (PostgreSQL, an agent, the API server):
 *
 * - 'pass': bytes flow both ways;
 * - 'refuse': new connections are closed at once (the peer looks down), open ones are reset;
 * - 'partition': nothing flows and nothing is closed — open connections hang, new ones are
 *   accepted and hang too, as when a replica's network is cut (no RST, no FIN);
 * - reset(): every open connection is destroyed now (a connection reset).
 *
 * Going back to 'pass' after a partition destroys the hung connections: the peer has long
 * forgotten them (as a real peer would after its keep-alives gave up), so the client must
 * reconnect.
 */

export type ProxyMode = 'pass' | 'refuse' | 'partition';

export interface TcpProxy {
  port: number;
  url(path?: string): string;
  mode(next: ProxyMode): void;
  reset(): void;
  /** Connections accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket | undefined;
  held: boolean;
}

export async function startTcpProxy(
  target: { host: string; port: number },
  scheme = 'tcp',
  /** Where it listens and the host its url() names (the cluster tests: every address, the node's). */
  at: { listen: string; advertise: string } = { listen: '127.0.0.1', advertise: '127.0.0.1' },
): Promise<TcpProxy> {
  let current: ProxyMode = 'pass';
  let accepted = 0;
  const pairs = new Set<Pair>();

  const drop = (pair: Pair): void => {
    pair.client.destroy();
    pair.upstream?.destroy();
    pairs.delete(pair);
  };

  const wire = (pair: Pair): void => {
    const upstream = connect(target.port, target.host);
    pair.upstream = upstream;
    upstream.on('error', () => drop(pair));
    upstream.on('close', () => drop(pair));
    pair.client.pipe(upstream);
    upstream.pipe(pair.client);
  };

  const server: Server = createServer((client) => {
    accepted++;
    const pair: Pair = { client, upstream: undefined, held: false };
    client.on('error', () => drop(pair));
    client.on('close', () => drop(pair));
    if (current === 'refuse') {
      client.destroy();
      return;
    }
    pairs.add(pair);
    if (current === 'partition') {
      // Accepted, never answered: the client waits as on a cut network.
      pair.held = true;
      client.pause();
      return;
    }
    wire(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, at.listen, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;

  return {
    port,
    url: (path = '') => `${scheme}://${at.advertise}:${port}${path}`,
    get accepted() {
      return accepted;
    },
    mode(next) {
      const before = current;
      current = next;
      if (next === 'refuse') for (const pair of [...pairs]) drop(pair);
      else if (next === 'partition') {
        for (const pair of pairs) {
          pair.held = true;
          pair.client.unpipe();
          pair.upstream?.unpipe();
          pair.client.pause();
          pair.upstream?.pause();
        }
      } else if (before === 'partition') {
        // The far side has given these up long ago: they are gone, the client reconnects.
        for (const pair of [...pairs]) if (pair.held) drop(pair);
      }
    },
    reset() {
      for (const pair of [...pairs]) {
        pair.client.resetAndDestroy();
        pair.upstream?.destroy();
        pairs.delete(pair);
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const pair of [...pairs]) drop(pair);
        server.close(() => resolve());
      }),
  };
}
