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

units=(switchd.service switchd.socket switchd-varlink.socket)
# The same substitution as the Makefile's install-units.
for unit in "${units[@]}"; do
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
echo "== systemd-analyze verify --man=no ${units[*]}"
verify_rc=0
verify_out=$(cd "$tmp" && systemd-analyze verify --man=no "${units[@]/#/./}" 2>&1) ||
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
# The unit's own comment says what the score is: it must say what it is.
said=$(sed -n 's/.*security --offline=true switchd\.service. rates this \([0-9][0-9.]*\).*/\1/p' \
  "$repo/systemd/switchd.service")
[[ $said == "$score" ]] ||
  fail "switchd.service's comment says systemd-analyze security rates it ${said:-(nothing)}, but it rates it $score"

# --- sysusers.d, applied to an empty root -----------------------------------------
if command -v systemd-sysusers >/dev/null; then
  echo "== systemd-sysusers in a scratch root"
  root="$tmp/root"
  mkdir -p "$root/etc"
  out=$(systemd-sysusers --root="$root" "$repo/systemd/sysusers.d/switchd.conf" 2>&1) ||
    fail "systemd-sysusers: $out"
  grep -q '^switchd:' "$root/etc/passwd" || fail "sysusers.d did not create user switchd"
  grep -q '^switchd-admin:' "$root/etc/group" || fail "sysusers.d did not create group switchd-admin"
  echo "sysusers: ok"
fi
# No tmpfiles.d entry: the units make /var/lib/switchd and /run/switchd
# (StateDirectory=, RuntimeDirectory=, the sockets' DirectoryMode=). One is
# applied by systemd-tmpfiles without systemd as PID 1 too (a package's
# postinst, a chroot), and made them the user switchd's there, which switchd
# run by hand as root refuses (README, "Installing from the Debian package").
if [[ -e $repo/systemd/tmpfiles.d ]]; then
  fail "systemd/tmpfiles.d is back: $(ls "$repo/systemd/tmpfiles.d")"
fi

# --- the varlink socket can be turned off ------------------------------------------
# Sockets= implies Wants=: a service that names switchd-varlink.socket there,
# or wants or requires it, starts it again with itself, so `systemctl disable
# --now switchd-varlink.socket` lasted only until the next start of switchd.
# The descriptor is passed without it (the socket's Service= triggers switchd).
if grep -nE '^(Sockets|Wants|Requires|BindsTo|Requisite|Upholds)=.*switchd-varlink\.socket' \
  "$repo/systemd/switchd.service"; then
  fail "switchd.service pulls in switchd-varlink.socket: disabling that socket would not last"
fi
grep -qx 'Service=switchd.service' "$repo/systemd/switchd-varlink.socket" ||
  fail "switchd-varlink.socket does not name Service=switchd.service: switchd would not be passed it"
grep -qx 'FileDescriptorName=varlink' "$repo/systemd/switchd-varlink.socket" ||
  fail "switchd-varlink.socket is not FileDescriptorName=varlink: switchd would take it for JSON-RPC"

# --- the units agree with the shipped configuration ------------------------------
# Under socket activation the units, not switchd.conf, make the sockets: what
# the configuration says (or its defaults) must be what they do.
conf="$repo/Config/switchd.conf"
if [[ -f $conf ]]; then
  # setting NAME: its last value in switchd.conf, "unset" when absent.
  setting() {
    sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*//p" "$conf" | sed 's/[[:space:]]*$//' |
      tail -n1 | grep -x '.*' || echo unset
  }
  listen=$(sed -n 's/^ListenStream=//p' "$repo/systemd/switchd.socket")
  varlink_listen=$(sed -n 's/^ListenStream=//p' "$repo/systemd/switchd-varlink.socket")
  socket=$(setting Socket)
  [[ $socket == unset ]] && socket=/run/switchd/switchd.sock
  [[ $socket == "$listen" ]] ||
    fail "Config/switchd.conf's Socket= is $socket but switchd.socket listens on $listen"
  # VarlinkSocket=: absent means io.switchd.Switches beside Socket=; empty, none.
  varlink=$(setting VarlinkSocket)
  [[ $varlink == unset ]] && varlink=${socket%/*}/io.switchd.Switches
  [[ -n $varlink ]] ||
    fail "Config/switchd.conf's VarlinkSocket= is empty (none) but switchd-varlink.socket is shipped"
  [[ $varlink == "$varlink_listen" ]] ||
    fail "Config/switchd.conf's VarlinkSocket= is $varlink but switchd-varlink.socket listens on $varlink_listen"
  mode=$(setting SocketMode)
  [[ $mode == unset ]] && mode=0666
  for unit in switchd.socket switchd-varlink.socket; do
    # Without SocketMode= systemd makes the socket 0666.
    unit_mode=$(sed -n 's/^SocketMode=//p' "$repo/systemd/$unit")
    [[ -n $unit_mode ]] || unit_mode=0666
    [[ $((8#$unit_mode)) == $((8#$mode)) ]] ||
      fail "Config/switchd.conf's SocketMode= is $mode but $unit makes its socket $unit_mode"
  done
  echo "units and Config/switchd.conf: ok (Socket=$socket, VarlinkSocket=$varlink, SocketMode=$mode)"
fi

echo "check-units: ok (exposure $score)"
