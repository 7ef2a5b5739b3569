/**
 * BENCH_HEAP_SAMPLE=1 (diagnosis): V8's sampling heap profiler over a stretch of a benchmark,
 * counting what was allocated there, collected since or not, by the function that allocated it.
 */
import { Session } from 'node:inspector/promises';

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: Node[];
}

export class HeapSampler {
  readonly #session = new Session();

  async start(): Promise<void> {
    this.#session.connect();
    await this.#session.post('HeapProfiler.startSampling', {
      samplingInterval: 1024,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  }

  /** The allocating functions with the most bytes, and the total, in KiB. */
  async stop(top = 25): Promise<{ totalKiB: number; top: Array<[string, number]> }> {
    const { profile } = (await this.#session.post('HeapProfiler.stopSampling')) as unknown as {
      profile: { head: Node };
    };
    this.#session.disconnect();
    const bySite = new Map<string, number>();
    let total = 0;
    const walk = (n: Node): void => {
      if (n.selfSize > 0) {
        const f = n.callFrame;
        const where = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|src|bench)\//, '$1/')}:${f.lineNumber + 1}`;
        bySite.set(where, (bySite.get(where) ?? 0) + n.selfSize);
        total += n.selfSize;
      }
      for (const c of n.children) walk(c);
    };
    walk(profile.head);
    const sorted = [...bySite].sort((a, b) => b[1] - a[1]).slice(0, top);
    return { totalKiB: total / 1024, top: sorted.map(([k, v]) => [k, Math.round(v / 1024)]) };
  }
}

/**
 * Runs one round, and when `asked`, samples what it allocated and prints the sites under `label`
 * on stderr (BENCH_HEAP_SAMPLE=1 asks for the last round of each kind).
 */
export async function sampledIf<T>(asked: boolean, label: string, round: () => Promise<T>): Promise<T> {
  if (!asked) return round();
  const sampler = new HeapSampler();
  await sampler.start();
  const result = await round();
  process.stderr.write(`${label} ${JSON.stringify(await sampler.stop(60), null, 1)}\n`);
  return result;
}
