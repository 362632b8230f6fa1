// npm puts node_modules/.bin first on PATH for scripts, so `node` here is the Node 24 that
// `npm ci` installed (optionalDependencies node-<os>-<cpu>). Fail early, with a fix, if not.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  console.error(
    `Strata needs Node.js >= 24 (isolated-vm 7), but scripts are running on ${process.version}.\n` +
      'Run `npm ci` first: it installs Node 24 into node_modules/.bin, which npm scripts use.\n' +
      'On a platform without a node-<os>-<cpu> package (macOS arm64), install Node 24 yourself.',
  );
  process.exit(1);
}
