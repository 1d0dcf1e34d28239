#!/usr/bin/env bash
# Prints the path of a runnable systemd varlinkctl: this machine's if its
# systemd is 255 or later (varlinkctl came in 255), else Debian trixie's
# (systemd 257; bookworm has 252) run through trixie's own ld.so on
# trixie's libraries, so nothing of this machine's libc is used. For the
# varlinkctl end-to-end tests (SWITCHD_VARLINKCTL, issue 25 item 2).
#
#   .ci/varlinkctl.sh        prints $SWITCHD_CI_CACHE/varlinkctl-trixie/varlinkctl
#
# The first run fetches the .debs below (about 12 MB) from the Debian archive
# with apt-get download against an apt configuration of its own in the cache
# (this machine's apt sources are left alone), unpacks them with dpkg-deb -x,
# keeps what varlinkctl loads and checks that it runs; later runs print the
# cached wrapper. Exits 1 with one line "varlinkctl: REASON" on standard
# error when it cannot (no network, no trixie key, a library from outside
# the unpacked tree); progress on standard error.
# SWITCHD_CI_DEBIAN_MIRROR (default http://deb.debian.org/debian) names the
# archive.
set -euo pipefail

cache=${SWITCHD_CI_CACHE:-/var/cache/switchd-ci}
mirror=${SWITCHD_CI_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=trixie
dir=$cache/varlinkctl-$suite
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
# varlinkctl (systemd) and what it and libsystemd-shared-257.so load, as
# readelf -d and ld.so --list say (the check below fails on one missing).
packages=(systemd libsystemd-shared libc6 libacl1 libblkid1 libcap2 libcrypt1 libmount1
  libssl3t64 libpam0g libseccomp2 libselinux1 libpcre2-8-0 libaudit1 libcap-ng0 libzstd1 zlib1g)
say() { printf 'varlinkctl.sh: %s\n' "$*" >&2; }
cannot() {
  printf 'varlinkctl: %s\n' "$*" >&2
  exit 1
}

# A varlinkctl answers --version with "systemd NNN (...)": 255 or later.
runs() {
  local version
  version=$("$1" --version 2>/dev/null) || return 1
  [[ $version =~ ^systemd\ (2[5-9][0-9]|[3-9][0-9][0-9])\  ]]
}

# This machine's own, when its systemd is new enough.
if own=$(command -v varlinkctl) && runs "$own"; then
  echo "$own"
  exit 0
fi
[ "$(uname -m)" = x86_64 ] || cannot "only for x86_64 (this is $(uname -m))"
mkdir -p "$cache" 2>/dev/null || cannot "cannot create the cache $cache"
exec 9>"$cache/varlinkctl.lock" || cannot "cannot write to the cache $cache"
flock 9
if [ -x "$dir/varlinkctl" ] && runs "$dir/varlinkctl"; then
  echo "$dir/varlinkctl"
  exit 0
fi
for tool in apt-get dpkg-deb flock; do
  command -v "$tool" >/dev/null || cannot "no $tool on this machine"
done
[ -r "$keyring" ] || cannot "no Debian archive keyring ($keyring: the debian-archive-keyring package provides it)"

t0=$SECONDS
fresh=$cache/varlinkctl-$suite.tmp
rm -rf "$fresh"
# Gone on the way out, done or not (when done, it has become $dir).
trap 'rm -rf "$fresh"' EXIT
mkdir -p "$fresh/apt/etc/sources.list.d" "$fresh/apt/etc/preferences.d" "$fresh/apt/etc/apt.conf.d" \
  "$fresh/apt/state/lists/partial" "$fresh/apt/cache/archives/partial" "$fresh/debs" "$fresh/unpacked"
printf 'deb [signed-by=%s] %s %s main\n' "$keyring" "$mirror" "$suite" >"$fresh/apt/etc/sources.list"
{
  printf 'Dir "%s/";\n' "$fresh/apt"
  printf 'Dir::Etc "%s/";\n' "$fresh/apt/etc"
  printf 'Dir::State "%s/";\n' "$fresh/apt/state"
  printf 'Dir::State::status "/dev/null";\n'
  printf 'Dir::Cache "%s/";\n' "$fresh/apt/cache"
  printf 'Debug::NoLocking "true";\n'
  printf 'APT::Architecture "amd64";\nAPT::Architectures { "amd64"; };\n'
  printf 'Acquire::Languages "none";\nAcquire::Retries "3";\n'
  # As root, apt would hand the download to _apt, who may not write here.
  [ "$(id -u)" != 0 ] || printf 'APT::Sandbox::User "root";\n'
} >"$fresh/apt/apt.conf"
export APT_CONFIG=$fresh/apt/apt.conf

say "fetching ${#packages[@]} packages of $suite from $mirror (not cached: $dir)"
# apt-get update says a fetch that failed with a warning and exit status 0.
if ! apt-get -q update >"$fresh/apt.log" 2>&1 ||
  ! compgen -G "$fresh/apt/state/lists/*_dists_${suite}_main_binary-amd64_Packages*" >/dev/null; then
  cannot "no package index of $suite from $mirror (no network, or no $suite key in $keyring?): $(grep -E '^(E|W):' "$fresh/apt.log" | head -1)"
fi
(cd "$fresh/debs" && apt-get -q download "${packages[@]}") >>"$fresh/apt.log" 2>&1 || {
  cannot "apt-get download from $suite failed: $(grep -E '^E:' "$fresh/apt.log" | head -1)"
}
for deb in "$fresh"/debs/*.deb; do
  dpkg-deb -x "$deb" "$fresh/unpacked" || cannot "dpkg-deb -x $(basename "$deb") failed"
done

# Keep varlinkctl, the loader and the libraries (not the rest of systemd,
# the documentation or glibc's gconv modules).
root=$fresh/root
mkdir -p "$root"
(cd "$fresh/unpacked" && tar --exclude=usr/lib/x86_64-linux-gnu/gconv -cf - \
  usr/bin/varlinkctl usr/lib64 usr/lib/x86_64-linux-gnu) | tar -C "$root" -xf - ||
  cannot "the unpacked packages lack varlinkctl or the libraries"
# Found from where it lies, so the cache may move.
cat >"$fresh/varlinkctl" <<'EOF'
#!/bin/sh
# Debian trixie's varlinkctl through trixie's ld.so and libraries only
# (made by .ci/varlinkctl.sh).
root=$(dirname "$(readlink -f "$0")")/root
lib=$root/usr/lib/x86_64-linux-gnu
exec "$root/usr/lib64/ld-linux-x86-64.so.2" --inhibit-cache \
  --library-path "$lib/systemd:$lib" "$root/usr/bin/varlinkctl" "$@"
EOF
chmod 0755 "$fresh/varlinkctl"

# ld.so falls back to this machine's /usr/lib for a library the tree lacks:
# every one must resolve inside it.
lib=$root/usr/lib/x86_64-linux-gnu
listed=$("$root/usr/lib64/ld-linux-x86-64.so.2" --inhibit-cache --library-path "$lib/systemd:$lib" \
  --list "$root/usr/bin/varlinkctl" 2>&1) || cannot "ld.so --list varlinkctl failed: $(echo "$listed" | head -1)"
outside=$(echo "$listed" | grep '=>' | grep -v "=> $root/" | grep -v ld-linux || true)
[ -z "$outside" ] || cannot "libraries not in the packages fetched: $(echo "$outside" | awk '{ print $1 }' | tr '\n' ' ')"
runs "$fresh/varlinkctl" || cannot "the unpacked varlinkctl does not run: $("$fresh/varlinkctl" --version 2>&1 | head -1)"

rm -rf "$fresh/unpacked" "$fresh/debs" "$fresh/apt" "$fresh/apt.log"
rm -rf "$dir"
mv "$fresh" "$dir"
version=$("$dir/varlinkctl" --version)
say "${version%%$'\n'*} unpacked and cached in $((SECONDS - t0)) s ($(du -sh "$dir" | cut -f1))"
echo "$dir/varlinkctl"
