import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The figures one bench run measured, each with its goal and whether it met it, so
 * `npm run bench -- --json` can write them down, print them as one table of goals met and
 * missed, and compare them with the last run's. Every benchmark prints its own lines; the lines
 * that carry a figure take their "goal … met/MISSED" text from here, so the printed verdict and
 * the JSON cannot disagree. Every figure has a goal: what has none is not measured here.
 */

export type GoalOp = '>=' | '<=' | '<' | '>';

export interface Goal {
  op: GoalOp;
  value: number;
}

export interface Figure {
  /** Stable across runs: what the JSON comparison keys on. */
  id: string;
  title: string;
  value: number;
  unit: string;
  goal: Goal;
  /** null: the value could not be measured (not a number). */
  met: boolean | null;
}

const recorded: Figure[] = [];

const SYMBOL: Record<GoalOp, string> = { '>=': '≥', '<=': '≤', '<': '<', '>': '>' };

function meets(value: number, goal: Goal): boolean {
  switch (goal.op) {
    case '>=':
      return value >= goal.value;
    case '<=':
      return value <= goal.value;
    case '<':
      return value < goal.value;
    case '>':
      return value > goal.value;
  }
}

function stated(goal: Goal, unit: string): string {
  return `${SYMBOL[goal.op]} ${goal.value.toLocaleString('en')}${unit === 'ratio' ? '' : ` ${unit}`}`;
}

/** Records a figure and returns its verdict text for the printed line: "(goal ≥ 0.80) met". */
export function figure(id: string, title: string, value: number, unit: string, goal: Goal): string {
  const met = Number.isFinite(value) ? meets(value, goal) : null;
  recorded.push({ id, title, value, unit, goal, met });
  return `(goal ${stated(goal, unit)}) ${met === true ? 'met' : 'MISSED'}`;
}

export function figures(): readonly Figure[] {
  return recorded;
}

interface Written {
  at: string;
  node: string;
  figures: Figure[];
}

/** Writes the run's figures to `path`; when a previous run is there, prints the two side by side. */
export function writeFigures(path: string): void {
  let last: Written | undefined;
  if (existsSync(path)) {
    try {
      last = JSON.parse(readFileSync(path, 'utf8')) as Written;
    } catch {
      last = undefined;
    }
  }
  const now: Written = { at: new Date().toISOString(), node: process.version, figures: [...recorded] };
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(now, null, 2)}\n`);
  const missed = recorded.filter((f) => f.met !== true);
  console.log(`\nGoals: ${recorded.length - missed.length} met, ${missed.length} missed`);
  for (const f of recorded)
    console.log(
      `  ${f.met === true ? 'met   ' : 'MISSED'} ${f.id}: ${round(f.value)} ${f.unit} (goal ${stated(f.goal, f.unit)}) ${f.title}`,
    );
  console.log(`Figures written to ${path}`);
  if (last === undefined) return;
  const before = new Map(last.figures.map((f) => [f.id, f]));
  console.log(`Against the last run (${last.at}):`);
  for (const f of recorded) {
    const old = before.get(f.id);
    const was =
      old === undefined ? 'not measured' : `${round(old.value)}${old.met === false ? ' MISSED' : ''}`;
    console.log(`  ${f.id}: ${was} → ${round(f.value)} ${f.unit}${f.met === false ? ' MISSED' : ''}`);
  }
}

function round(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  return Math.abs(n) >= 100 ? Math.round(n).toLocaleString('en') : n.toFixed(Math.abs(n) >= 10 ? 1 : 3);
}
