# Strata's native helpers (see native/README.md). Built by node-gyp at install, against the
# headers of the Node 24 that npm installed (native/scripts/build.mjs picks them).
# Linux only: elsewhere both targets are empty and src/native/native-paths.ts says so.
{
  'target_defaults': {
    'cflags_c': ['-std=gnu11', '-Wall', '-Wextra', '-Wunused-parameter', '-Werror'],
  },
  'targets': [
    {
      'target_name': 'strata-exec',
      'conditions': [
        ['OS=="linux"', {
          'type': 'executable',
          'sources': ['native/exec-helper.c'],
          'ldflags': ['-Wl,-z,relro,-z,now'],
        }, {
          'type': 'none',
        }],
      ],
    },
    {
      # Tests only: a platform without seccomp, Landlock or user namespaces (native/simulate-platform.c).
      'target_name': 'strata-simulate-platform',
      'conditions': [
        ['OS=="linux"', {
          'type': 'executable',
          'sources': ['native/simulate-platform.c'],
        }, {
          'type': 'none',
        }],
      ],
    },
    {
      'target_name': 'strata_watchdog',
      'conditions': [
        ['OS=="linux"', {
          'type': 'loadable_module',
          'sources': ['native/memory-watchdog.c'],
        }, {
          'type': 'none',
        }],
      ],
    },
  ],
}
