import { type PowerFigures, powerRun } from '../crash/power-run.js';

/**
 * `SOAK_POWER=1 npm run test:soak`: the power-loss fault test's scenario (test/crash/power-run.ts)
 * hundreds of times, and its figures: runs, cuts, turns acknowledged, acknowledged turns lost,
 * files damaged, turns lost or duplicated at the end. Same SOAK_RUNS and SOAK_SEED as the
 * SIGKILL soak (./run.ts); the seeds that failed are listed for FAULT_SEEDS.
 */
export async function powerSoak(): Promise<boolean> {
  const runs = Number(process.env.SOAK_RUNS ?? 200);
  const firstSeed = Number(process.env.SOAK_SEED ?? 1);
  const total = {
    runs: 0,
    cuts: 0,
    turns: 0,
    acknowledged: 0,
    lostAcknowledged: 0,
    damaged: 0,
    lost: 0,
    duplicated: 0,
  };
  const bad: PowerFigures[] = [];
  const started = Date.now();
  for (let i = 0; i < runs; i++) {
    const f = await powerRun({ seed: firstSeed + i });
    total.runs++;
    total.cuts += f.cuts;
    total.turns += f.turns;
    total.acknowledged += f.acknowledged;
    total.lostAcknowledged += f.lostAcknowledged.length;
    total.damaged += f.damaged.length;
    total.lost += f.lost.length;
    total.duplicated += f.duplicated.length;
    const failed =
      f.lostAcknowledged.length + f.damaged.length + f.lost.length + f.duplicated.length + f.overlaps;
    if (failed > 0) {
      bad.push(f);
      console.log(`  seed ${f.seed}: ${JSON.stringify({ ...f, ms: undefined })}`);
    }
    if ((i + 1) % 20 === 0 || i + 1 === runs) {
      const secs = Math.round((Date.now() - started) / 1000);
      console.log(
        `power: ${i + 1}/${runs} runs, ${total.cuts} cuts, ${total.lostAcknowledged} acknowledged lost, ${total.damaged} damaged, ${total.lost} lost, ${total.duplicated} duplicated (${secs} s)`,
      );
    }
  }
  console.log(
    `\nSQLite, one replica, A2A 1.0, power cuts: runs ${total.runs}, cuts ${total.cuts}, turns ${total.turns}, acknowledged ${total.acknowledged}, ` +
      `acknowledged lost ${total.lostAcknowledged}, damaged ${total.damaged}, lost ${total.lost}, duplicated ${total.duplicated}`,
  );
  if (bad.length > 0) console.log(`  seeds that failed: ${bad.map((b) => b.seed).join(',')}`);
  return bad.length === 0;
}
