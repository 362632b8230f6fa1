// ava runs the compiled tests: tsc writes test/*.ts to dist/test/*.js. Each test file starts its
// own PostgreSQL server (test/helpers/postgres-server.ts).
export default {
  files: ['test/**/*.test.ts'],
  typescript: { rewritePaths: { 'test/': 'dist/test/' }, compile: false },
  timeout: '120s',
  workerThreads: false,
};
