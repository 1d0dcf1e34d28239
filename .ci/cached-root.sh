#!/usr/bin/env bash
# Prints the path of a tarball of a minimal Debian root, made by debootstrap
# the first time in an ISO week and cached (a new one each week picks up
# Debian's updates); progress on standard error. Shared by check-deb.sh (a
# bare root) and check-booted.sh (a root with systemd to boot).
#
#   .ci/cached-root.sh NAME [PACKAGE,PACKAGE...]
#
# The tarball is $SWITCHD_CI_CACHE/bookworm-NAME-YYYY-Www.tar (default cache
# /var/cache/switchd-ci); older weeks of NAME are deleted. debootstrap uses
# the host's Debian mirror when it names one.
set -euo pipefail

name=$1
include=${2:-}
cache=${SWITCHD_CI_CACHE:-/var/cache/switchd-ci}
suite=bookworm
say() { printf 'cached-root: %s\n' "$*" >&2; }

bash "$(dirname "${BASH_SOURCE[0]}")/apt-need.sh" debootstrap:debootstrap
mkdir -p "$cache"
# One debootstrap at a time per name.
exec 9>"$cache/root-$name.lock"
flock 9
tarball=$cache/$suite-$name-$(date -u +%G-W%V).tar
if [ ! -f "$tarball" ]; then
  say "debootstrap --variant=minbase${include:+ --include=$include} $suite (not cached: $tarball)"
  t0=$SECONDS
  mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  fresh=$cache/debootstrap-$name.tmp
  rm -rf "$fresh"
  debootstrap --variant=minbase ${include:+"--include=$include"} "$suite" "$fresh" ${mirror:+"$mirror"} \
    >"$fresh.log" 2>&1 || {
    tail -20 "$fresh.log" >&2
    say "FAIL: debootstrap failed (log: $fresh.log)"
    exit 1
  }
  tar -C "$fresh" --numeric-owner -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  rm -rf "$fresh" "$fresh.log"
  find "$cache" -maxdepth 1 -name "$suite-$name-*.tar" ! -path "$tarball" -delete
  say "root made and cached in $((SECONDS - t0)) s"
fi
echo "$tarball"
