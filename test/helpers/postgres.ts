// The throwaway PostgreSQL lives in the test kit, which the bench shares (the bench imports no test).
export * from '../../testkit/postgres.js';
