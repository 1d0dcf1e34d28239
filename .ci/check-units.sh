#!/usr/bin/env bash
# Verifies the systemd units and scores the service's sandbox.
#
#   .ci/check-units.sh [PATH-TO-BUILT-switchd]     (default .build/release/switchd)
#
# `systemd-analyze verify` fails when ExecStart's binary does not exist, so the
# units are checked as copies with @SBINDIR@/@BINDIR@/@SYSCONFDIR@ substituted, the way
# `make install` does. Works without systemd as PID 1 (CI: Debian 12,
# systemd 252 tools). Environment: MAX_EXPOSURE (default 1.5) is the highest
# `systemd-analyze security` exposure that passes.
set -euo pipefail

max_exposure=${MAX_EXPOSURE:-1.5}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$repo/.build/release/switchd}

fail() {
  echo "check-units: FAIL: $*" >&2
  exit 1
}

command -v systemd-analyze >/dev/null || fail "systemd-analyze not found (install the Debian package systemd)"
[[ -x $bin && -f $bin ]] || fail "no executable switchd at '$bin' (build it first: swift build -c release)"
bin=$(realpath "$bin")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-units.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The same substitution as the Makefile's install-units.
for unit in switchd.service switchd.socket; do
  sed -e "s|@SBINDIR@/switchd|$bin|g" \
    -e "s|@SBINDIR@|$(dirname "$bin")|g" \
    -e "s|@BINDIR@|$(dirname "$bin")|g" \
    -e "s|@SYSCONFDIR@|/etc|g" \
    "$repo/systemd/$unit" >"$tmp/$unit"
  if grep -n '@[A-Z_]*@' "$tmp/$unit"; then
    fail "$unit has a placeholder that neither make install nor this script substitutes"
  fi
done

export SYSTEMD_COLORS=0 SYSTEMD_PAGER= SYSTEMD_LOG_COLOR=0

# --- systemd-analyze verify ----------------------------------------------------
# It also loads the units ours depend on (sockets.target, ...) and may complain
# about the host's own units, or return non-zero because of them (no systemd as
# PID 1 in a container); every complaint about ours names switchd.
echo "== systemd-analyze verify --man=no switchd.socket switchd.service"
verify_rc=0
verify_out=$(cd "$tmp" && systemd-analyze verify --man=no ./switchd.socket ./switchd.service 2>&1) ||
  verify_rc=$?
[[ -n $verify_out ]] && printf '%s\n' "$verify_out"
if ours=$(grep -i 'switchd' <<<"$verify_out"); then
  fail "systemd-analyze verify reports problems with our units:
$ours"
fi
if ((verify_rc != 0)); then
  echo "check-units: note: verify exited $verify_rc, but nothing it printed concerns switchd's units"
fi
echo "verify: ok"

# --- systemd-analyze security --------------------------------------------------
echo "== systemd-analyze security --offline=true switchd.service"
security_out=$(cd "$tmp" && systemd-analyze security --offline=true --no-pager ./switchd.service 2>&1) || true
printf '%s\n' "$security_out" | grep -E '^✗|Overall' || true
score=$(sed -n 's/.*Overall exposure level for switchd\.service: *\([0-9][0-9.]*\).*/\1/p' <<<"$security_out")
[[ -n $score ]] || fail "no 'Overall exposure level for switchd.service' line in:
$security_out"
if awk -v s="$score" -v m="$max_exposure" 'BEGIN { exit !(s > m) }'; then
  fail "switchd.service exposure $score is above $max_exposure"
fi
echo "security: exposure $score (limit $max_exposure)"

# --- sysusers.d / tmpfiles.d, applied to an empty root -------------------------
if command -v systemd-sysusers >/dev/null && command -v systemd-tmpfiles >/dev/null; then
  echo "== systemd-sysusers / systemd-tmpfiles --create in a scratch root"
  root="$tmp/root"
  mkdir -p "$root/etc"
  out=$(systemd-sysusers --root="$root" "$repo/systemd/sysusers.d/switchd.conf" 2>&1) ||
    fail "systemd-sysusers: $out"
  grep -q '^switchd:' "$root/etc/passwd" || fail "sysusers.d did not create user switchd"
  grep -q '^switchd-admin:' "$root/etc/group" || fail "sysusers.d did not create group switchd-admin"
  out=$(systemd-tmpfiles --root="$root" --create "$repo/systemd/tmpfiles.d/switchd.conf" 2>&1) ||
    fail "systemd-tmpfiles: $out"
  [[ -n $out ]] && printf '%s\n' "$out"
  [[ $(stat -c %a "$root/var/lib/switchd") == 700 ]] || fail "tmpfiles.d: /var/lib/switchd is not 0700"
  [[ $(stat -c %a "$root/run/switchd") == 755 ]] || fail "tmpfiles.d: /run/switchd is not 0755"
  echo "sysusers/tmpfiles: ok"
fi

# --- the units agree with the shipped configuration ------------------------------
conf="$repo/Config/switchd.conf"
if [[ -f $conf ]]; then
  listen=$(sed -n 's/^ListenStream=//p' "$repo/systemd/switchd.socket")
  socket=$(sed -n 's/^[[:space:]]*Socket[[:space:]]*=[[:space:]]*//p' "$conf" | tail -n1)
  if [[ -n $socket && $socket != "$listen" ]]; then
    fail "Config/switchd.conf says Socket=$socket but switchd.socket listens on $listen"
  fi
fi

echo "check-units: ok (exposure $score)"
