# The pre-exec helper strata-emptyroot (native/emptyroot.c), built by node-gyp at install into
# build/Release (native/scripts/build.mjs of @strata/runtime picks Node 24's headers). Linux only:
# elsewhere the target is empty and the layer's probe says so.
{
  # Set by @strata/runtime's native/scripts/build.mjs (node-gyp --strata_static_pie=1) when the compiler links static-pie.
  'variables': { 'strata_static_pie%': 0 },
  'target_defaults': {
    'cflags_c': ['-std=gnu11', '-Wall', '-Wextra', '-Wunused-parameter', '-Werror'],
  },
  'targets': [
    {
      'target_name': 'strata-emptyroot',
      'conditions': [
        ['OS=="linux"', {
          'type': 'executable',
          'sources': ['native/emptyroot.c'],
          'ldflags': ['-Wl,-z,relro,-z,now'],
          # A launch-chain helper: static-pie where the compiler can link it (@strata/runtime's native/scripts/static-pie.mjs).
          'conditions': [['strata_static_pie==1', { 'ldflags': ['-static-pie'] }]],
        }, {
          'type': 'none',
        }],
      ],
    },
  ],
}
