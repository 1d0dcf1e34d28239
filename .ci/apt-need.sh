#!/usr/bin/env bash
# Installs the Debian packages of what is missing on this machine.
#
#   .ci/apt-need.sh WHAT:PACKAGE...
#
# WHAT is a command (looked up on PATH) or an absolute path (a file that must
# exist). Waits up to 10 minutes for the dpkg lock, which a fresh machine's
# own apt-get may hold. Progress on standard error.
set -euo pipefail

need=()
for pair in "$@"; do
  what=${pair%%:*}
  package=${pair#*:}
  case "$what" in
    /*) [ -e "$what" ] || need+=("$package") ;;
    *) command -v "$what" >/dev/null || need+=("$package") ;;
  esac
done
[ ${#need[@]} -gt 0 ] || exit 0
printf 'apt-need: installing %s\n' "${need[*]}" >&2
apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${need[@]}" >/dev/null
