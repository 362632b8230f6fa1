# Strata's native helpers (see native/README.md). Built by node-gyp at install, against the
# headers of the Node 24 that npm installed (native/scripts/build.mjs picks them).
# The helpers and the watchdog are Linux only: elsewhere those targets are empty and
# src/native/native-paths.ts says so. The deadline addon (C++: V8's API is C++) builds on Linux and
# macOS: the in-process Runtime needs it too.
{
  # Set by native/scripts/build.mjs (node-gyp --strata_static_pie=1) when the compiler links static-pie.
  'variables': { 'strata_static_pie%': 0 },
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
          # A launch-chain helper: static-pie where the compiler can link it (native/scripts/static-pie.mjs).
          'conditions': [['strata_static_pie==1', { 'ldflags': ['-static-pie'] }]],
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
    {
      # How the parent starts a worker: posix_spawn and a pidfd, not fork (native/worker-spawn.c).
      'target_name': 'strata_spawn',
      'conditions': [
        ['OS=="linux"', {
          'type': 'loadable_module',
          'sources': ['native/worker-spawn.c'],
        }, {
          'type': 'none',
        }],
      ],
    },
    {
      # The worker's side of the wire's frames in C (native/wire-codec.c): its JavaScript runs jitless.
      'target_name': 'strata_wire',
      'conditions': [
        ['OS=="linux" or OS=="mac"', {
          'type': 'loadable_module',
          'sources': ['native/wire-codec.c'],
        }, {
          'type': 'none',
        }],
      ],
    },
    {
      # The soft timeout: a watcher thread that stops a guest isolate at its deadline (native/guest-deadline.cc).
      'target_name': 'strata_deadline',
      'conditions': [
        ['OS=="linux" or OS=="mac"', {
          'type': 'loadable_module',
          'sources': ['native/guest-deadline.cc'],
          'cflags_cc': ['-Wall', '-Wextra', '-Werror'],
          'xcode_settings': { 'OTHER_CPLUSPLUSFLAGS': ['-Wall', '-Wextra', '-Werror'] },
        }, {
          'type': 'none',
        }],
      ],
    },
  ],
}
