# The pre-exec helper strata-landlock (native/landlock.c) and the addon strata_landlock
# (native/landlock-addon.c: the ABI, the errata, and the ABI >= 8 deny-all stack with thread sync),
# built by node-gyp at install into build/Release (native/scripts/build.mjs of @strata/runtime picks
# Node 24's headers). Both include native/landlock-uapi.h. Linux only: elsewhere the targets are
# empty and the layer's probe says so.
{
  # Set by @strata/runtime's native/scripts/build.mjs (node-gyp --strata_static_pie=1) when the compiler links static-pie.
  'variables': { 'strata_static_pie%': 0 },
  'target_defaults': {
    'cflags_c': ['-std=gnu11', '-Wall', '-Wextra', '-Wunused-parameter', '-Werror'],
    'include_dirs': [
      # strata-napi.h, the Node-API helpers every Strata addon shares.
      "<!(node -p \"require('path').join(require('path').dirname(require.resolve('@strata/runtime/package.json')), 'native')\")",
    ],
  },
  'targets': [
    {
      'target_name': 'strata-landlock',
      'conditions': [
        ['OS=="linux"', {
          'type': 'executable',
          'sources': ['native/landlock.c'],
          'ldflags': ['-Wl,-z,relro,-z,now'],
          # A launch-chain helper: static-pie where the compiler can link it (@strata/runtime's native/scripts/static-pie.mjs).
          'conditions': [['strata_static_pie==1', { 'ldflags': ['-static-pie'] }]],
        }, {
          'type': 'none',
        }],
      ],
    },
    {
      'target_name': 'strata_landlock',
      'conditions': [
        ['OS=="linux"', {
          'type': 'loadable_module',
          'sources': ['native/landlock-addon.c'],
        }, {
          'type': 'none',
        }],
      ],
    },
  ],
}
