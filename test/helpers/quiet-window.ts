/**
 * The one way a test proves that something does NOT happen: it watches for a window of real
 * time, named with why that window is long enough (longer than the retry, backoff, lease or
 * interval that would make the thing happen), and then asserts that what it watches did not
 * change. Nothing else in the tests sleeps before an assertion: a test that waits for something
 * to happen waits on the condition itself (waitFor), or drives a clock.
 *
 *   const before = proxy.accepted;
 *   await quietWindow(1_000, 'longer than the longest backoff (300 ms): a pending retry would have come');
 *   expect(proxy.accepted).toBe(before);
 */
export async function quietWindow(ms: number, why: string): Promise<void> {
  if (why.trim() === '') throw new Error('a quiet window says why it is long enough');
  await new Promise((resolve) => setTimeout(resolve, ms));
}
