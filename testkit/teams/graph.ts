/**
 * A stand-in for Microsoft Graph's one call the broker makes, on loopback:
 * `POST /v1.0/users/{id}/checkMemberGroups` ({ groupIds: up to 20 }) answers the ids of those groups
 * the user is a member of (Graph's transitive membership; here, the groups the test made), for a
 * token the fake Entra issued for Graph. `failing` answers 503 instead, as Graph does when it is
 * unavailable (learn.microsoft.com/graph/api/directoryobject-checkmembergroups).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FakeEntra } from './entra.js';

export class FakeGraph {
  readonly calls: Array<{ userId: string; groupIds: string[]; status: number }> = [];
  failing = false;
  #server: Server | undefined;
  #url = '';
  readonly #groups = new Map<string, Set<string>>();
  readonly #entra: FakeEntra;

  constructor(entra: FakeEntra) {
    this.#entra = entra;
  }

  get url(): string {
    return this.#url;
  }

  group(groupId: string, members: string[]): void {
    this.#groups.set(groupId, new Set(members));
  }

  async start(): Promise<this> {
    this.#server = createServer((req, res) => {
      const reply = (status: number, value: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      };
      let text = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => {
        text += c;
      });
      req.on('end', () => {
        void (async () => {
          const match = /^\/v1\.0\/users\/([^/]+)\/checkMemberGroups$/.exec(req.url ?? '');
          const userId = decodeURIComponent(match?.[1] ?? '');
          const answer = (status: number, value: unknown, groupIds: string[] = []): void => {
            this.calls.push({ userId, groupIds, status });
            reply(status, value);
          };
          const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
          const ok = await this.#entra.verify(token, this.#url).then(
            () => true,
            () => false,
          );
          if (!ok) return answer(401, { error: { code: 'InvalidAuthenticationToken' } });
          if (req.method !== 'POST' || match === null) return answer(404, { error: { code: 'NotFound' } });
          const groupIds = (JSON.parse(text) as { groupIds?: string[] }).groupIds ?? [];
          if (groupIds.length > 20) return answer(400, { error: { code: 'BadRequest' } }, groupIds);
          if (this.failing) return answer(503, { error: { code: 'ServiceUnavailable' } }, groupIds);
          answer(200, { value: groupIds.filter((g) => this.#groups.get(g)?.has(userId) === true) }, groupIds);
        })();
      });
    });
    await new Promise<void>((resolve) => this.#server?.listen(0, '127.0.0.1', resolve));
    this.#url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    const server = this.#server;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
