/**
 * Inputs for the contract-index tests. They live outside any `*.test.ts` file on purpose: the
 * index scans test files for tagged titles, and these samples would otherwise cite rows.
 */

/** A test file with every way a title can carry row ids, and the things that are not titles. */
export const SAMPLE_TEST_SOURCE = [
  "import { it } from 'vitest';",
  "it('[E-3] resends the same messageId after -32004', () => {});",
  'it("[S-6] starts a person\'s text with the label line", () => {});',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: test source as text; the scanner must keep ${…} as written
  "it(`[R-4][T-2] says so when no artifact text came (${version === '1.0' ? 'new' : 'old'})`, () => {});",
  "it('[DT-2] [DT-4] reaches the agent and asks for the extension', () => {});",
  "it('[E-8] waits, but can\\'t wait longer than a day', () => {});",
  'const CASES = [',
  "  { name: '[R-1] a bare Message for an answer' },",
  "  ['[E-1] CredentialsRejectedError', 401],",
  '];',
  "// it('[Q-9] a comment is not a test')",
  ' * [Q-9] neither is a doc comment',
  "it('no row at all', () => {});",
  "it('mentions [E-5] in the middle', () => {});",
  'expect(x).toBe(1); const y = f([E-6]);',
].join('\n');

/** The titles SAMPLE_TEST_SOURCE holds, in source order. */
export const SAMPLE_TITLES = [
  { title: '[E-3] resends the same messageId after -32004', ids: ['E-3'] },
  { title: "[S-6] starts a person's text with the label line", ids: ['S-6'] },
  {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the title as the scanner reads it, placeholder included
    title: "[R-4][T-2] says so when no artifact text came (${version === '1.0' ? 'new' : 'old'})",
    ids: ['R-4', 'T-2'],
  },
  { title: '[DT-2] [DT-4] reaches the agent and asks for the extension', ids: ['DT-2', 'DT-4'] },
  { title: "[E-8] waits, but can\\'t wait longer than a day", ids: ['E-8'] },
  { title: '[R-1] a bare Message for an answer', ids: ['R-1'] },
  { title: '[E-1] CredentialsRejectedError', ids: ['E-1'] },
];

/** Ids that SAMPLE_TEST_SOURCE names where no title starts, with their lines. */
export const SAMPLE_MISPLACED = [
  { line: 14, id: 'E-5' },
  { line: 15, id: 'E-6' },
];

/** A page in the shape of docs/agent-contract.md. */
export const SAMPLE_DOC = [
  '# The agent contract',
  '',
  'Prose that mentions E-3 and | E-4 | is not a row.',
  '',
  '## Errors (E)',
  '',
  '| Row | The agent answers | The broker |',
  '| --- | ----------------- | ---------- |',
  '| E-3 | -32004 to a send  | waits      |',
  '| E-1 | 401 or 403        | fails      |',
  '',
  '## Replies (R)',
  '',
  '| R-1 | a bare Message | sends again |',
  '',
  '<!-- contract-index:start -->',
  '| E-9 | 3 |',
  '<!-- contract-index:end -->',
  '',
].join('\n');

export const SAMPLE_ROWS = [
  { id: 'E-3', section: 'Errors (E)' },
  { id: 'E-1', section: 'Errors (E)' },
  { id: 'R-1', section: 'Replies (R)' },
];

/** An id that is not a row of SAMPLE_DOC. */
export const UNKNOWN_ID = 'Q-7';
export const UNKNOWN_TITLE = `[${UNKNOWN_ID}] a proof of a row that does not exist`;

/** A second test file citing E-3, to check the order of files in the index. */
export const OTHER_FILE_SOURCE = "it('[E-3] from another file', () => {});";

/** A title with backticks of its own, which the index must keep in one code span. */
export const TICKED_SOURCE = "it('[R-1] maps `event: error`', () => {});";
export const TICKED_LINE = '- `t.test.ts`: `` [R-1] maps `event: error` ``';

/** How the index lists the bare-Message sample of SAMPLE_TEST_SOURCE from test/b.test.ts. */
export const BARE_MESSAGE_LINE = '- `test/b.test.ts`: `[R-1] a bare Message for an answer`';

/** A source whose only title cites UNKNOWN_ID. */
export const UNKNOWN_SOURCE = `it('${UNKNOWN_TITLE}', () => {});`;

/** What the check says about the problems the refusal test builds. */
export const EXPECTED_PROBLEM_LINES = [
  'row E-2 (Errors (E)) has no test naming [E-2] in its title',
  `test/x.test.ts: "${UNKNOWN_TITLE}" cites [${UNKNOWN_ID}], which is not a row of docs/agent-contract.md`,
  'test/sample.test.ts:14: [E-5] is not at the start of a test title; put row ids first',
];
