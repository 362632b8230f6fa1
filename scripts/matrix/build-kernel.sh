#!/bin/sh
# Builds the one kernel of the VM matrix that Debian does not ship: Debian 12's 6.1 source
# (linux-source-6.1, the same Debian-patched tree as linux-image-6.1.0-N-amd64) configured
# without seccomp (CONFIG_SECCOMP and CONFIG_SECCOMP_FILTER off), the real counterpart of
# `strata-simulate-platform --no-seccomp`. Debian's kernels have seccomp built in with no boot
# parameter or sysctl that switches filtering off, so only another build lacks it.
#
# The configuration is the smallest that runs the matrix (tinyconfig, then what the initramfs,
# Node and the other layers need: see FRAGMENT below), so that it builds in minutes on two cores;
# it is not a general-purpose kernel. Into the cache (MATRIX_CACHE, as fetch.sh):
#   <cache>/root/boot/vmlinuz-<release> and config-<release>, <release> = 6.1.N-strata-noseccomp;
#   <cache>/kernels-built: the line `6.1-noseccomp RELEASE VMLINUZ CONFIG` run.mjs reads;
#   <cache>/versions-built.txt: the source package's version, as fetch.sh's versions.txt.
# Needs, once: apt-get install flex bison bc libelf-dev (and gcc, make); the source package
# comes from the apt lists (`apt-get download`, nothing installed). Idempotent: a built kernel
# of the same source and configuration is not built again.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cache=${MATRIX_CACHE:-"$here/../../.matrix-cache"}
mkdir -p "$cache/debs" "$cache/root/boot" "$cache/kernel-src"
cache=$(cd "$cache" && pwd)
fail() { echo "matrix build-kernel: FAILED: $*" >&2; exit 1; }

for tool in apt-get dpkg-deb make gcc flex bison bc xz; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is not on PATH (apt-get install flex bison bc libelf-dev gcc make xz-utils)"
done
[ -e /usr/include/libelf.h ] || [ -e /usr/include/gelf.h ] || fail "libelf's headers are missing (apt-get install libelf-dev): the x86 build's objtool needs them"

# The source: linux-source-6.1 (its version is the tree's).
(cd "$cache/debs" && apt-get download -q linux-source-6.1 2>&1) | grep -v '^W: Download is performed unsandboxed' || true
deb=$(ls -t "$cache"/debs/linux-source-6.1_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || fail "apt-get download linux-source-6.1 produced no .deb (apt-get update?)"
version=$(dpkg-deb -f "$deb" Version)
src="$cache/kernel-src/linux-source-6.1-$version"
if [ ! -e "$src/.extracted" ]; then
  echo "matrix build-kernel: extracting linux-source-6.1 $version"
  rm -rf "$src" "$cache/kernel-src/tmp"
  mkdir -p "$cache/kernel-src/tmp"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$cache/kernel-src/tmp" ./usr/src/linux-source-6.1.tar.xz
  tar -xJf "$cache/kernel-src/tmp/usr/src/linux-source-6.1.tar.xz" -C "$cache/kernel-src/tmp"
  mv "$cache/kernel-src/tmp/linux-source-6.1" "$src"
  rm -rf "$cache/kernel-src/tmp"
  : > "$src/.extracted"
fi

# What the matrix needs on top of tinyconfig, and the two it must not have. The initramfs
# (gzip, /init a shell script), the serial console, ACPI to power off; proc, sys, devtmpfs,
# tmpfs, securityfs; Node and V8 (futex, epoll, eventfd, timerfd, signalfd, AIO, membarrier,
# unix sockets for child stdio, TCP on loopback for the probes); the other layers (user, mount,
# net and IPC namespaces for emptyroot; Landlock).
FRAGMENT="64BIT SMP PRINTK BUG TTY SERIAL_8250 SERIAL_8250_CONSOLE BLK_DEV_INITRD RD_GZIP
BINFMT_ELF BINFMT_SCRIPT PROC_FS PROC_SYSCTL SYSFS TMPFS DEVTMPFS DEVTMPFS_MOUNT SHMEM
MULTIUSER FUTEX EPOLL SIGNALFD TIMERFD EVENTFD AIO FILE_LOCKING POSIX_TIMERS ADVISE_SYSCALLS
MEMBARRIER SYSVIPC NAMESPACES USER_NS NET_NS IPC_NS UTS_NS PID_NS NET UNIX INET PCI ACPI
SECURITY SECURITYFS SECURITY_LANDLOCK HIGH_RES_TIMERS"
localversion="-strata-noseccomp"
stamp=$(printf '%s\n%s\n%s\n' "$version" "$FRAGMENT" "$localversion" | sha1sum | cut -c1-12)
build="$cache/kernel-src/build-noseccomp"
if [ ! -e "$build/.built-$stamp" ]; then
  rm -rf "$build"
  mkdir -p "$build"
  echo "matrix build-kernel: configuring (tinyconfig + the matrix's needs, no seccomp)"
  make -s -C "$src" O="$build" tinyconfig >/dev/null
  set --
  for option in $FRAGMENT; do set -- "$@" --enable "$option"; done
  "$src/scripts/config" --file "$build/.config" "$@" \
    --disable SECCOMP --disable SECCOMP_FILTER \
    --set-str LSM landlock --set-str LOCALVERSION "$localversion" --disable LOCALVERSION_AUTO
  make -s -C "$src" O="$build" olddefconfig >/dev/null
  # olddefconfig drops what a dependency refuses: check that each option stuck, and that seccomp is off.
  for option in $FRAGMENT; do
    grep -q "^CONFIG_$option=y" "$build/.config" || fail "CONFIG_$option did not stick in the configuration (a dependency refused it)"
  done
  ! grep -q '^CONFIG_SECCOMP=y' "$build/.config" || fail 'CONFIG_SECCOMP is still on'
  ! grep -q '^CONFIG_SECCOMP_FILTER=y' "$build/.config" || fail 'CONFIG_SECCOMP_FILTER is still on'
  echo "matrix build-kernel: building bzImage with $(nproc) jobs (a few minutes)"
  make -s -C "$src" O="$build" -j"$(nproc)" bzImage >"$build/make.log" 2>&1 || { tail -n 30 "$build/make.log" >&2; fail "make bzImage (log: $build/make.log)"; }
  : > "$build/.built-$stamp"
fi
release=$(cat "$build/include/config/kernel.release")
cp "$build/arch/x86/boot/bzImage" "$cache/root/boot/vmlinuz-$release"
cp "$build/.config" "$cache/root/boot/config-$release"
echo "6.1-noseccomp $release boot/vmlinuz-$release boot/config-$release" > "$cache/kernels-built"
# What it was built from, as fetch.sh's versions.txt lines (matrix.mjs keeps both in the results).
echo "linux-source-6.1 $version all (built here as $release: tinyconfig + the matrix's needs, CONFIG_SECCOMP off; configuration $(sha1sum "$build/.config" | cut -c1-12))" > "$cache/versions-built.txt"
echo "matrix build-kernel: ok, $release (linux-source-6.1 $version; CONFIG_SECCOMP off)"
