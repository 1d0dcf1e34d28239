#!/usr/bin/env bash
# Builds the Debian package of one commit of this repository and prints the
# path of the .deb (the only thing on standard output; progress on standard
# error). Shared by check-deb.sh (HEAD) and check-booted.sh (HEAD, and the
# previous commit for the upgrade).
#
#   .ci/build-deb.sh [COMMIT]      (default HEAD; as root, tools installed)
#
# Built by dpkg-buildpackage -us -uc -b in a clone at a fixed path under
# $SWITCHD_CI_CACHE (default /var/cache/switchd-ci), so SwiftPM's .build is
# kept between runs and commits (SwiftPM's build directory cannot be moved).
# Each package is kept as debs/COMMIT.deb: a commit is built once, and the
# newest few are kept.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${SWITCHD_CI_CACHE:-/var/cache/switchd-ci}
export PATH="/opt/swift/usr/bin:$PATH"
say() { printf 'build-deb: %s\n' "$*" >&2; }

bash "$repo/.ci/apt-need.sh" dpkg-buildpackage:dpkg-dev dh:debhelper scdoc:scdoc pkg-config:pkgconf \
  git:git /usr/include/sqlite3.h:libsqlite3-dev /usr/include/systemd/sd-bus.h:libsystemd-dev
mkdir -p "$cache"
# One build at a time in the shared clone.
exec 9>"$cache/build-deb.lock"
flock 9
commit=$(git -C "$repo" rev-parse --verify "${1:-HEAD}^{commit}")
debs=$cache/debs
kept=$debs/$commit.deb
mkdir -p "$debs"
if [ -f "$kept" ]; then
  touch "$kept" # used: the pruning below keeps the recently used
  say "$(git -C "$repo" rev-parse --short "$commit"): cached $kept"
  echo "$kept"
  exit 0
fi

build=$cache/build
src=$build/switchd
mkdir -p "$build"
[ -d "$src/.git" ] || git clone -q "$repo" "$src"
# HEAD brings its ancestors; another commit comes with the branches.
git -C "$src" fetch -q "$repo" HEAD
git -C "$src" cat-file -e "$commit^{commit}" 2>/dev/null ||
  git -C "$src" fetch -q "$repo" '+refs/heads/*:refs/remotes/ci/*'
git -C "$src" checkout -q --force --detach "$commit"
git -C "$src" clean -q -fdx -e /.build
rm -f "$build"/switchd_*
say "dpkg-buildpackage -us -uc -b in a clone of $(git -C "$src" rev-parse --short HEAD)"
t0=$SECONDS
log=$build/build.log
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$log" 2>&1 || {
  tail -40 "$log" >&2
  say "FAIL: dpkg-buildpackage failed (log: $log)"
  exit 1
}
say "package built in $((SECONDS - t0)) s"
cp "$(ls "$build"/switchd_*_*.deb)" "$kept.tmp"
mv "$kept.tmp" "$kept"
# The six last used stay: HEAD and the commit it upgrades from, for a few
# branches and main.
ls -t "$debs"/*.deb | tail -n +7 | xargs -r rm -f
echo "$kept"
