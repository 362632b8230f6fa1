// ava runs the compiled tests: tsc writes test/*.ts to dist/test/*.js.
export default {
  files: ['test/**/*.test.ts'],
  typescript: { rewritePaths: { 'test/': 'dist/test/' }, compile: false },
  timeout: '180s',
  workerThreads: false,
};
