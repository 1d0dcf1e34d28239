#!/usr/bin/env bash
# The Debian package under a booted systemd: a bookworm root with systemd as
# PID 1, journald, dbus, polkitd and NetworkManager, booted with
# systemd-nspawn -b, the built .deb installed inside (issue 23 item 4).
#
#   .ci/check-booted.sh            (as root; installs the tools it needs)
#
# In order: an upgrade from the package of the previous commit on main
# (values, a held policy, revisions and history unchanged, the service
# restarted by the package, both sockets left listening: same inodes, not
# restarted); socket activation, STATUS=, reload, a clean
# stop, journald priorities; the varlink socket turned off with `systemctl
# disable --now` staying off across a restart of the service, and on again;
# the watchdog restarting a SIGSTOP'd daemon with
# every acknowledged value; a backup restored with the commands of
# docs/configuration.md, no client able to start switchd while the file is
# replaced; the sandbox (systemd-analyze security, and an
# apply command running under it); Wi-Fi through NetworkManager with
# /usr/libexec/switchd/nm-radio, and drift; Authorization=polkit (a rule
# granting one user's write and not another's, sd-bus loaded by the first
# question). Every wait has a deadline, every failure prints the journal,
# and the container is halted on the way out. Last, a reboot: switchd.service
# starts with the machine and carries out a timed value that ended while it
# was down.
#
# Cached under $SWITCHD_CI_CACHE (default /var/cache/switchd-ci) as
# check-deb.sh does: the root as a tarball keyed by the ISO week, the
# packages by commit (.ci/build-deb.sh). SWITCHD_DEB=FILE tests that package;
# SWITCHD_UPGRADE_FROM=COMMIT (default: HEAD~ on main, else the commit of
# main the branch starts from) or SWITCHD_UPGRADE_FROM_DEB=FILE choose the
# old one; SWITCHD_UPGRADE_FROM=none skips the upgrade. Exits 0 with a SKIP
# line when this machine cannot boot a container (no systemd-nspawn
# permission); a container that boots and misbehaves is a failure.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${SWITCHD_CI_CACHE:-/var/cache/switchd-ci}
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
started=$SECONDS
say() { printf 'check-booted: %s\n' "$*"; }
elapsed() { say "$1 ($((SECONDS - started)) s so far)"; }
skip() {
  say "SKIP: $*"
  exit 0
}

# --- tools (build-deb.sh and cached-root.sh install their own) ------------------
bash "$repo/.ci/apt-need.sh" systemd-nspawn:systemd-container nsenter:util-linux

work=$(mktemp -d "${TMPDIR:-/var/tmp}/check-booted.XXXXXX")
root=$work/root
nspawn=
init=
halt() {
  [ -n "$nspawn" ] || return 0
  local i
  for i in 1 2; do
    kill -TERM "$nspawn" 2>/dev/null || break
    for _ in $(seq 100); do kill -0 "$nspawn" 2>/dev/null || break 2; sleep 0.1; done
  done
  kill -KILL "$nspawn" 2>/dev/null || true
  wait "$nspawn" 2>/dev/null || true
  nspawn=
}
cleanup() {
  halt
  rm -rf "$work"
}
trap cleanup EXIT

# Runs a command inside the container (all its namespaces), bounded.
in_box() { timeout 120 nsenter -t "$init" -a "$@"; }
fail() {
  echo "check-booted: FAIL: $*" >&2
  if [ -n "$init" ] && kill -0 "$init" 2>/dev/null; then
    echo "--- journalctl -u switchd (last 40 lines, with priorities)" >&2
    in_box journalctl -u switchd.service -u switchd.socket -n 40 --no-pager -o short-precise \
      --output-fields=PRIORITY,MESSAGE 2>&1 | sed 's/^/  /' >&2 || true
    in_box systemctl status --no-pager switchd.service 2>&1 | sed 's/^/  /' >&2 || true
    echo "--- the container: $(in_box systemctl is-system-running 2>&1); jobs and failed units" >&2
    { in_box systemctl list-jobs --no-pager; in_box systemctl --failed --no-pager; } 2>&1 | sed 's/^/  /' >&2 || true
  fi
  if [ -s "$work/boot.log" ]; then
    echo "--- the container's console (last 10 lines)" >&2
    tail -10 "$work/boot.log" | sed 's/^/  /' >&2
  fi
  exit 1
}
# Polls until COMMAND succeeds, at most SECONDS: until_ok SECONDS WHAT COMMAND...
until_ok() {
  local seconds=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "$what (waited $seconds s)"
    sleep 0.1
  done
}
mkdir -p "$cache"

# --- the packages ----------------------------------------------------------------
if [ -n "${SWITCHD_DEB:-}" ]; then
  deb=$(realpath "$SWITCHD_DEB")
else
  deb=$(bash "$repo/.ci/build-deb.sh" HEAD) || fail "the package did not build"
fi
old_deb=
if [ -n "${SWITCHD_UPGRADE_FROM_DEB:-}" ]; then
  old_deb=$(realpath "$SWITCHD_UPGRADE_FROM_DEB")
elif [ "${SWITCHD_UPGRADE_FROM:-}" != none ]; then
  from=${SWITCHD_UPGRADE_FROM:-}
  if [ -z "$from" ]; then
    main=$(git -C "$repo" rev-parse -q --verify main || git -C "$repo" rev-parse -q --verify origin/main || true)
    head=$(git -C "$repo" rev-parse HEAD)
    if [ -z "$main" ] || [ "$main" = "$head" ]; then
      from=HEAD~
    else
      from=$(git -C "$repo" merge-base HEAD "$main" || echo "$main")
    fi
  fi
  if git -C "$repo" rev-parse -q --verify "$from^{commit}" >/dev/null; then
    old_deb=$(bash "$repo/.ci/build-deb.sh" "$from") || fail "the package of $from did not build"
  else
    say "not checked: the upgrade (no commit $from in this clone: a shallow clone?)"
  fi
fi
elapsed "packages ready"

# --- the root ----------------------------------------------------------------------
# polkitd does not configure without libpam-systemd (it needs a logind).
tarball=$(bash "$repo/.ci/cached-root.sh" booted \
  systemd,systemd-sysv,dbus,polkitd,libpam-systemd,udev,network-manager,iproute2) || fail "no root"
mkdir "$root"
tar -C "$root" --numeric-owner -xf "$tarball"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# nspawn mounts a tmpfs over the container's /tmp: the packages go to /var/tmp.
cp "$deb" "$root/var/tmp/switchd-new.deb"
[ -z "$old_deb" ] || cp "$old_deb" "$root/var/tmp/switchd-old.deb"
# A short watchdog, so that the SIGSTOP check waits seconds, not 30.
mkdir -p "$root/etc/systemd/system/switchd.service.d"
printf '[Service]\nWatchdogSec=3s\n' >"$root/etc/systemd/system/switchd.service.d/50-ci-watchdog.conf"

# --- boot ---------------------------------------------------------------------------
# The container's init: the child of nspawn that is pid 1 in its own pid
# namespace ("NSpid: HOSTPID 1"). nspawn forks an intermediate child first,
# which exits once it has started init: a child without that line is not it.
container_init() {
  local pid
  for pid in $(cat "/proc/$nspawn/task/$nspawn/children" 2>/dev/null) \
    $(grep -l "^PPid:[[:space:]]*$nspawn\$" /proc/[0-9]*/status 2>/dev/null | cut -d/ -f3); do
    if grep -Eq '^NSpid:[[:space:]]+[0-9]+[[:space:]]+1$' "/proc/$pid/status" 2>/dev/null; then
      echo "$pid"
      return 0
    fi
  done
  return 0
}
booted() { [[ $(in_box systemctl is-system-running 2>/dev/null) =~ ^(running|degraded)$ ]]; }
# Boots the root and waits until systemd is up. The first boot may find
# that this machine cannot boot a container (SKIP); `boot_box again`, after
# `halt`, has booted one already, so a failure then is a failure.
boot_box() {
  systemd-nspawn --keep-unit --register=no -D "$root" -b --console=pipe </dev/null \
    >"$work/boot.log" 2>&1 &
  nspawn=$!
  init=
  local deadline=$((SECONDS + 30))
  until [ -n "$init" ]; do
    if ! kill -0 "$nspawn" 2>/dev/null; then
      nspawn=
      local why="systemd-nspawn cannot boot a container here: $(grep -v '^$' "$work/boot.log" | tail -3 | tr '\n' ' ')"
      [ "${1:-}" = again ] && fail "$why"
      skip "$why"
    fi
    [ $SECONDS -lt $deadline ] || fail "systemd-nspawn started no init within 30 s: $(tail -5 "$work/boot.log")"
    init=$(container_init)
    [ -n "$init" ] || sleep 0.1
  done
  local t0=$SECONDS
  until_ok 60 "systemd in the container did not finish booting" booted
  say "booted: $(in_box systemctl is-system-running) in about $((SECONDS - t0)) s, $(in_box systemctl --version | head -1)"
}
boot_box
elapsed "container up"

# --- helpers inside -------------------------------------------------------------------
ctl() { in_box switchctl "$@"; }
main_pid() { in_box systemctl show -P MainPID switchd.service; }
is_active() { [ "$(in_box systemctl is-active "$1")" = active ]; }
# The sockets as an upgrade must leave them: each path's inode (a restarted
# socket unit unlinks and re-binds it) and when each unit last started.
sockets_state() {
  in_box stat -c '%n inode %i' /run/switchd/switchd.sock /run/switchd/io.switchd.Switches
  in_box systemctl show -p ActiveEnterTimestampMonotonic switchd.socket switchd-varlink.socket
}
# The names of the sockets systemd passed the running switchd, sorted
# (LISTEN_FDNAMES as it started).
fd_names() {
  in_box sh -c 'tr "\0" "\n" </proc/$(systemctl show -P MainPID switchd.service)/environ' |
    sed -n 's/^LISTEN_FDNAMES=//p' | tr ':' '\n' | sort | tr '\n' ' ' | sed 's/ $//'
}
# What must survive an upgrade and a watchdog restart: every value, why each
# is what it is, the revision and the history.
snapshot() {
  local key
  ctl status | grep '^revision:'
  for key in $(ctl list | awk '{ print $1 }'); do
    printf '%s: %s\n' "$key" "$(ctl get "$key")"
    ctl why "$key"
  done
  ctl history
}
install_deb() {
  in_box dpkg --force-confold -i "$1" >"$work/install.log" 2>&1 ||
    in_box apt-get -o DPkg::Lock::Timeout=600 install -f -y -qq -o Dpkg::Options::=--force-confold \
      >>"$work/install.log" 2>&1 || {
    cat "$work/install.log" >&2
    fail "installing $1 failed"
  }
}
# dpkg -i does not fetch Depends: libsqlite3-0 may be missing from the root.
if ! in_box dpkg -s libsqlite3-0 >/dev/null 2>&1; then
  in_box apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 || true
  in_box apt-get -o DPkg::Lock::Timeout=600 install -y -qq libsqlite3-0 >/dev/null 2>&1 ||
    fail "cannot install libsqlite3-0 in the root"
fi

# --- an upgrade from the previous package ----------------------------------------------
if [ -n "$old_deb" ]; then
  install_deb /var/tmp/switchd-old.deb
  ctl off wifi >/dev/null
  ctl on bluetooth >/dev/null
  printf '[airplane-mode]\nReadOnly=yes\nChecked=off\nReason=Held by CI.\n' \
    >"$root/etc/switchd/policy.d/50-ci.conf"
  ctl reload >/dev/null || fail "switchctl reload (with the policy) failed on the old package"
  ctl why airplane-mode | grep -q "Held by CI" || fail "the policy does not hold airplane-mode"
  before=$(snapshot)
  old_pid=$(main_pid)
  [ "$old_pid" != 0 ] || fail "the old package's switchd is not running"
  is_active switchd.socket && is_active switchd-varlink.socket ||
    fail "the old package's sockets are not both listening"
  sockets_before=$(sockets_state)
  install_deb /var/tmp/switchd-new.deb
  until_ok 30 "the service did not come back after the upgrade" is_active switchd.service
  new_pid=$(main_pid)
  [ "$new_pid" != "$old_pid" ] || fail "the upgrade did not restart switchd (MainPID still $old_pid)"
  # Only the service: a socket restarted by the upgrade refused the clients
  # that connected meanwhile (and could fail to listen, "Socket service
  # switchd.service already active, refusing").
  is_active switchd.socket && is_active switchd-varlink.socket ||
    fail "a socket is not listening after the upgrade: switchd.socket $(in_box systemctl is-active switchd.socket), switchd-varlink.socket $(in_box systemctl is-active switchd-varlink.socket)"
  sockets_after=$(sockets_state)
  [ "$sockets_before" = "$sockets_after" ] || fail "the upgrade restarted the sockets (re-bound, or started again):
$(diff <(echo "$sockets_before") <(echo "$sockets_after"))"
  [ "$(fd_names)" = "jsonrpc varlink" ] || fail "the restarted switchd was passed '$(fd_names)', not both sockets"
  after=$(snapshot)
  [ "$before" = "$after" ] || fail "values, holds, revisions or history changed in the upgrade:
$(diff <(echo "$before") <(echo "$after"))"
  say "upgrade from $(in_box dpkg-deb -f /var/tmp/switchd-old.deb Version) ($(basename "$old_deb" .deb | cut -c1-7)): ok (service restarted, both sockets left listening on the same inodes; $(ctl list | wc -l) values, the hold, $(echo "$after" | grep '^revision:') and $(ctl history | wc -l) lines of history kept)"
else
  install_deb /var/tmp/switchd-new.deb
fi
in_box dpkg -s switchd | grep -q '^Status: install ok installed' || fail "switchd is not installed"

# --- the configuration for the rest: Wi-Fi through NetworkManager, a probe -------------
sed -i 's|^#ExecApply=/usr/libexec/switchd/rfkill-apply wlan$|ExecApply=/usr/libexec/switchd/nm-radio apply wifi|' \
  "$root/etc/switchd/switches.d/10-connectivity.conf"
sed -i 's|^#ExecWatch=/usr/libexec/switchd/nm-radio watch wifi$|ExecWatch=/usr/libexec/switchd/nm-radio watch wifi|' \
  "$root/etc/switchd/switches.d/10-connectivity.conf"
grep -q '^ExecApply=/usr/libexec/switchd/nm-radio apply wifi$' "$root/etc/switchd/switches.d/10-connectivity.conf" ||
  fail "could not give wifi its nm-radio ExecApply= line"
grep -q '^ExecWatch=/usr/libexec/switchd/nm-radio watch wifi$' "$root/etc/switchd/switches.d/10-connectivity.conf" ||
  fail "could not give wifi its nm-radio ExecWatch= line"
# An apply command that writes down what it runs under, in the only
# directory the sandbox lets it write.
mkdir -p "$root/usr/local/libexec"
cat >"$root/usr/local/libexec/switchd-probe" <<'EOF'
#!/bin/sh
# A switch's apply command that writes down the sandbox it runs in.
{
  grep -E '^(Uid|CapEff|NoNewPrivs|Seccomp):' /proc/self/status
  if touch /etc/switchd-probe 2>/dev/null; then echo "etc: writable"; else echo "etc: read-only"; fi
} >/run/switchd/probe.new
mv /run/switchd/probe.new /run/switchd/probe
EOF
chmod 0755 "$root/usr/local/libexec/switchd-probe"
printf '[ci.probe]\nLabel=Sandbox probe\nDefault=off\nExecApply=/usr/local/libexec/switchd-probe\n' \
  >"$root/etc/switchd/switches.d/90-ci-probe.conf"
in_box switchd --check-config /etc/switchd >/dev/null || fail "the configuration does not check"
in_box systemctl daemon-reload

# --- socket activation, STATUS=, reload, stop, journald ----------------------------------
in_box systemctl stop switchd.service switchd.socket
in_box systemctl start switchd.socket
! is_active switchd.service || fail "switchd.service is active before any client"
ctl list >/dev/null || fail "the first switchctl call failed"
is_active switchd.service || fail "the first switchctl call did not activate switchd.service"
status_text=$(in_box systemctl show -P StatusText switchd.service)
[ -n "$status_text" ] || fail "switchd.service has no STATUS= text"
# STATUS= changes once the start's reconcile ends ("..., applying 1 stored
# values", then without it): a text read before that and a status page
# shown after it differed, and the check failed (CI, once). Both are read
# again until they show the same text.
status_shown() {
  local page
  status_text=$(in_box systemctl show -P StatusText switchd.service)
  page=$(in_box systemctl status --no-pager switchd.service) || return 1
  [ -n "$status_text" ] && grep -qF "Status: \"$status_text\"" <<<"$page"
}
until_ok 10 "systemctl status does not show the STATUS= line" status_shown
say "socket activation: ok (STATUS=\"$status_text\")"

pid=$(main_pid)
since=$(in_box date '+%Y-%m-%d %H:%M:%S')
in_box systemctl reload switchd.service || fail "systemctl reload switchd failed"
[ "$(main_pid)" = "$pid" ] || fail "systemctl reload restarted switchd"
reloaded() { in_box journalctl -u switchd.service --since "$since" --no-pager -o cat | grep -qi reload; }
until_ok 10 "no reload line in the journal after systemctl reload" reloaded
# A broken file: the reload is refused with an error, `systemctl reload` says
# so (ExecReload= is switchctl reload, which waits for the answer), and the
# service stays.
printf '[broken\n' >"$root/etc/switchd/switches.d/95-ci-broken.conf"
if in_box systemctl reload switchd.service; then
  fail "systemctl reload succeeded with a broken configuration file"
fi
refused() { [ -n "$(in_box journalctl -u switchd.service --since "$since" -p warning --no-pager -o cat)" ]; }
until_ok 10 "the refused reload logged nothing at warning or above" refused
rm "$root/etc/switchd/switches.d/95-ci-broken.conf"
is_active switchd.service || fail "a refused reload took the service down"
[ "$(main_pid)" = "$pid" ] || fail "a refused reload restarted switchd"
priorities=$(in_box journalctl -u switchd.service --no-pager -o json --output-fields=PRIORITY,MESSAGE |
  sed -n 's/.*"PRIORITY":"\([0-7]\)".*/\1/p' | sort -u | tr '\n' ' ')
[[ $priorities == *6* ]] || fail "no info (6) lines from switchd in the journal: priorities $priorities"
if in_box journalctl -u switchd.service --no-pager -o cat | grep -q '^<[0-7]>'; then
  fail "journald shows a <N> prefix in a message: the priority was not parsed"
fi
say "reload: ok (switchctl reload via systemctl; a broken file refused, and systemctl reload failed); journal priorities: $priorities"

in_box systemctl stop switchd.service
[ "$(in_box systemctl is-active switchd.service)" = inactive ] || fail "switchd.service is not inactive after stop"
[ "$(in_box systemctl show -P Result switchd.service)" = success ] ||
  fail "stop was not clean: Result=$(in_box systemctl show -P Result switchd.service)"
is_active switchd.socket || fail "switchd.socket went down with the service"
say "stop: ok (Result=success, the socket still listening)"

# --- the varlink socket turned off, and on again ------------------------------------------
# disable --now must last: switchd.service neither wants the varlink socket
# nor names it in Sockets= (which implies Wants=), or the next start of the
# service would start it again.
ctl status >/dev/null
[ "$(fd_names)" = "jsonrpc varlink" ] || fail "switchd was passed '$(fd_names)', not both sockets"
in_box systemctl disable --now switchd-varlink.socket >/dev/null 2>&1
in_box systemctl restart switchd.service
until_ok 30 "switchd did not come back after a restart" is_active switchd.service
! is_active switchd-varlink.socket ||
  fail "switchd-varlink.socket, disabled and stopped, came back with a restart of switchd.service"
in_box test ! -e /run/switchd/io.switchd.Switches || fail "/run/switchd/io.switchd.Switches is there with its socket off"
[ "$(fd_names)" = jsonrpc ] || fail "with the varlink socket off switchd was passed '$(fd_names)'"
ctl status >/dev/null || fail "switchctl status failed with the varlink socket off"
# On again, as switchd-varlink.socket says: enabled, started while the service is stopped.
in_box systemctl enable switchd-varlink.socket >/dev/null 2>&1
# (systemctl warns that the sockets can still activate the service: quiet.)
in_box systemctl stop switchd.service 2>/dev/null || fail "systemctl stop switchd.service failed"
in_box systemctl start switchd-varlink.socket || fail "switchd-varlink.socket did not start again"
ctl status >/dev/null || fail "switchctl status failed after the varlink socket was turned on again"
[ "$(fd_names)" = "jsonrpc varlink" ] || fail "with the varlink socket on again switchd was passed '$(fd_names)'"
in_box systemctl stop switchd.service 2>/dev/null || fail "systemctl stop switchd.service failed"
say "varlink socket: disable --now lasted across a restart of switchd (passed jsonrpc only); enabled again, both passed"

# --- the watchdog ------------------------------------------------------------------------
ctl on ci.probe >/dev/null
ctl toggle bluetooth >/dev/null
before=$(snapshot)
pid=$(main_pid)
restarts=$(in_box systemctl show -P NRestarts switchd.service)
in_box systemctl kill --kill-who=main -s SIGSTOP switchd.service
restarted() { local now; now=$(main_pid); [ "$now" != 0 ] && [ "$now" != "$pid" ] && is_active switchd.service; }
until_ok 30 "systemd did not restart the SIGSTOP'd switchd (WatchdogSec=3s)" restarted
[ "$(in_box systemctl show -P NRestarts switchd.service)" -gt "$restarts" ] || fail "NRestarts did not grow"
in_box journalctl -u switchd.service --no-pager -o cat | grep -qi watchdog ||
  fail "the journal does not say the watchdog fired"
after=$(snapshot)
[ "$before" = "$after" ] || fail "values changed across the watchdog restart:
$(diff <(echo "$before") <(echo "$after"))"
say "watchdog: ok (SIGSTOP'd pid $pid killed and restarted as $(main_pid), every value kept)"

# --- restoring a backup as docs/configuration.md says --------------------------------------
# The sh block after "**Restoring.**", run command by command (without sudo).
# Between its first command (the stop) and the file's replacement a client
# connects: it must find nothing listening, and switchd must stay stopped
# (stopping only switchd.service left the sockets to start it again on the
# file being replaced).
restore=$(awk '/^\*\*Restoring\.\*\*/ { r = 1 } r && /^```sh$/ { b = 1; next } b && /^```$/ { exit } b' \
  "$repo/docs/configuration.md" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' | sed 's/^sudo //')
[ -n "$restore" ] || fail "no restore commands found in docs/configuration.md (\"**Restoring.**\" and a sh block)"
backup=$(grep -o '/root/[^ ]*\.db' <<<"$restore" | head -1)
[ -n "$backup" ] || fail "the documented restore names no backup under /root: $restore"
in_box rm -f "$backup"
ctl backup "$backup" >/dev/null || fail "switchctl backup $backup failed"
values() { local key; for key in $(ctl list | awk '{ print $1 }'); do echo "$key: $(ctl get "$key")"; done; }
backed=$(values)
was=$(ctl get bluetooth)
ctl toggle bluetooth >/dev/null
first=1
while read -r command; do
  in_box sh -c "$command" || fail "the documented restore command failed: $command"
  if [ -n "$first" ]; then
    first=
    if ctl status >/dev/null 2>&1; then
      fail "after the documented '$command' a client still reached switchd (the file would be replaced under it)"
    fi
    ! is_active switchd.service ||
      fail "after the documented '$command' a client's connection started switchd again"
  fi
done <<<"$restore"
is_active switchd.service || fail "the documented restore left switchd.service stopped"
ctl status >/dev/null || fail "switchd does not answer after the documented restore"
is_active switchd-varlink.socket || fail "the documented restore left switchd-varlink.socket stopped"
[ "$(ctl get bluetooth)" = "$was" ] || fail "the restore did not bring back bluetooth's backed-up value ($was)"
[ "$(values)" = "$backed" ] || fail "the restored values differ from the backup's:
$(diff <(echo "$backed") <(values))"
say "restore as documented: ok (nothing listening while the file was replaced; the backup's values back)"

# --- the sandbox -------------------------------------------------------------------------
exposure=$(in_box systemd-analyze security switchd.service --no-pager | grep -i 'overall exposure' || true)
[ -n "$exposure" ] || fail "systemd-analyze security printed no overall exposure"
say "sandbox: $exposure"
in_box rm -f /run/switchd/probe
ctl off ci.probe >/dev/null
probed() { in_box test -f /run/switchd/probe; }
until_ok 20 "the probe's apply command did not run" probed
probe=$(in_box cat /run/switchd/probe)
uid=$(in_box id -u switchd)
grep -Eq "^Uid:[[:space:]]+$uid[[:space:]]" <<<"$probe" || fail "the apply command did not run as switchd: $probe"
grep -Eq '^CapEff:[[:space:]]+0+$' <<<"$probe" || fail "the apply command has capabilities: $probe"
grep -Eq '^NoNewPrivs:[[:space:]]+1$' <<<"$probe" || fail "the apply command may gain privileges: $probe"
grep -Eq '^Seccomp:[[:space:]]+2$' <<<"$probe" || fail "the apply command runs without the system-call filter: $probe"
grep -q '^etc: read-only$' <<<"$probe" || fail "the apply command could write /etc: $probe"
say "apply command under the sandbox: ok (uid $uid, no capabilities, no new privileges, seccomp, /etc read-only)"

# --- NetworkManager for real -------------------------------------------------------------
radio() { in_box nmcli radio wifi; }
ctl off wifi >/dev/null || fail "switchctl off wifi failed: $(ctl why wifi)"
[ "$(radio)" = disabled ] || fail "switchctl off wifi left nmcli radio wifi $(radio): $(ctl why wifi)"
ctl on wifi >/dev/null || fail "switchctl on wifi failed: $(ctl why wifi)"
[ "$(radio)" = enabled ] || fail "switchctl on wifi left nmcli radio wifi $(radio): $(ctl why wifi)"
# as_user USER GROUP COMMAND...: COMMAND in the box as USER, with a bare environment.
as_user() {
  local user=$1 group=$2
  shift 2
  in_box setpriv --reuid="$user" --regid="$group" --clear-groups env -i PATH=/usr/bin:/bin "$@"
}
as_switchd() { as_user switchd switchd "$@"; }
[ "$(as_switchd /usr/libexec/switchd/nm-radio check wifi)" = on ] || fail "nm-radio check wifi did not say on"
in_box sh -c 'setpriv --reuid=switchd --regid=switchd --clear-groups timeout 30 /usr/libexec/switchd/nm-radio watch wifi >/var/tmp/watch.out 2>/var/tmp/watch.err &'
watch_says() { [ "$(in_box sh -c 'tr "\n" " " </var/tmp/watch.out')" = "$1" ]; }
until_ok 10 "nm-radio watch wifi did not print the current state (on): $(in_box cat /var/tmp/watch.out /var/tmp/watch.err)" watch_says "on "
in_box nmcli radio wifi off
until_ok 10 "nm-radio watch wifi did not follow nmcli radio wifi off: $(in_box cat /var/tmp/watch.out /var/tmp/watch.err)" watch_says "on off "
[ "$(as_switchd /usr/libexec/switchd/nm-radio check wifi)" = off ] || fail "nm-radio check wifi did not say off"
in_box nmcli radio wifi on
say "NetworkManager: ok (switchctl off/on wifi switch the radio; nm-radio check and watch read it back)"

# --- drift (rule 19): nmcli typed behind switchd's back ----------------------------------
observed() { ctl get wifi --json | grep -q "\"observed\":$1"; }
until_ok 20 "wifi's observed never said true (ExecWatch= nm-radio watch wifi): $(ctl why wifi)" observed true
# Held: a policy holds Wi-Fi off; a typed `nmcli radio wifi on` is re-applied.
printf '[wifi]\nReadOnly=yes\nChecked=off\nReason=Held off by CI.\n' \
  >"$root/etc/switchd/policy.d/60-ci-wifi.conf"
ctl reload >/dev/null || fail "switchctl reload (wifi held off) failed"
radio_off() { [ "$(radio)" = disabled ]; }
until_ok 20 "the policy did not turn the radio off: $(radio)" radio_off
in_box nmcli radio wifi on
typed=$(date +%s%N)
until_ok 10 "nmcli radio wifi on while wifi is held off was not re-applied: $(ctl why wifi)" radio_off
reapplied_ms=$((($(date +%s%N) - typed) / 1000000))
ctl is-on wifi && fail "a held wifi changed its value on drift: $(ctl why wifi)"
ctl why wifi | grep -qi 're-applied' || fail "why does not say wifi was re-applied: $(ctl why wifi)"
say "drift while held: ok (nmcli radio wifi on re-applied, the radio off again after ${reapplied_ms} ms; value unchanged; why says re-applied)"
# Free: the policy lifted, a typed `nmcli radio wifi on` is adopted, one external event.
rm -f "$root/etc/switchd/policy.d/60-ci-wifi.conf"
ctl reload >/dev/null || fail "switchctl reload (wifi free) failed"
ctl is-on wifi && fail "wifi is not off after the policy was lifted: $(ctl why wifi)"
revision=$(ctl status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["revision"])')
in_box nmcli radio wifi on
adopted() { ctl is-on wifi; }
until_ok 10 "nmcli radio wifi on while wifi is free was not adopted: $(ctl why wifi)" adopted
# What committed since: exactly one change, wifi's, cause external, actor source system.
newer=$(ctl history --json --limit 20 | python3 -c '
import json, sys
since = int(sys.argv[1])
new = [e for e in json.load(sys.stdin)["entries"] if e["revision"] > since]
print(" ".join("%s/%s/%s" % (e["key"], e["cause"], e["actor"].get("source")) for e in new))
' "$revision")
[ "$newer" = "wifi/external/system" ] ||
  fail "adopting nmcli radio wifi on was not one external change of wifi by the system: $newer"
[ "$(radio)" = enabled ] || fail "the adopted value was applied back wrong: nmcli radio wifi $(radio)"
say "drift while free: ok (nmcli radio wifi on adopted: switchctl get wifi says on, one external event)"

# --- polkit under the unit: sd-bus loaded (dlopen) by the first question -----------------
in_box useradd --no-create-home --shell /usr/sbin/nologin ci-polkit 2>/dev/null || true
printf '%s\n' \
  'polkit.addRule(function(action, subject) {' \
  '  if (action.id == "io.switchd.write" && action.lookup("key") == "bluetooth" &&' \
  '      subject.user == "ci-polkit") {' \
  '    return polkit.Result.YES;' \
  '  }' \
  '});' >"$root/etc/polkit-1/rules.d/50-ci-switchd.rules"
sed -i 's|^#Authorization=builtin$|Authorization=polkit|' "$root/etc/switchd/switchd.conf"
grep -q '^Authorization=polkit$' "$root/etc/switchd/switchd.conf" || fail "could not set Authorization=polkit"
in_box systemctl restart switchd.service
until_ok 30 "switchd did not come back under Authorization=polkit" is_active switchd.service
# root administers: its writes ask nobody.
ctl toggle bluetooth >/dev/null || fail "root's write failed under polkit"
ctl toggle bluetooth >/dev/null || fail "root's second write failed under polkit"
maps_libsystemd() { in_box grep -q libsystemd "/proc/$(main_pid)/maps"; }
! maps_libsystemd || fail "switchd mapped libsystemd before it asked polkit anything"
was=$(ctl get bluetooth)
as_user ci-polkit nogroup switchctl --no-ask-password toggle bluetooth >/dev/null ||
  fail "polkit did not let ci-polkit toggle bluetooth: $(ctl why bluetooth)"
[ "$(ctl get bluetooth)" != "$was" ] || fail "bluetooth did not change for ci-polkit"
if as_user ci-polkit nogroup switchctl --no-ask-password toggle wifi >/dev/null 2>&1; then
  fail "polkit let ci-polkit toggle wifi, which no rule grants"
fi
maps_libsystemd || fail "switchd asked polkit without libsystemd mapped"
say "polkit under the unit: ok (a rule's write granted, another refused; libsystemd mapped only once asked)"

# --- a restart keeps a tried change (rule 20: only a reboot reverts it) ------------------
# The unit's sandbox once hid /proc/sys/kernel/random/boot_id
# (ProcSubset=pid): every start looked like a reboot and reverted them all.
ctl toggle bluetooth --confirm 10m --no-ask >/dev/null || fail "switchctl toggle --confirm failed"
# The checks above restarted it often enough to reach systemd's start limit.
in_box systemctl reset-failed switchd.service
in_box systemctl restart switchd.service || fail "systemctl restart switchd.service failed"
until_ok 30 "switchd did not come back after a restart" is_active switchd.service
ctl --json get bluetooth | grep -q '"pendingUntil":"' ||
  fail "a restart of switchd.service reverted a tried change: $(ctl history bluetooth --limit 2)"
started_log=$(in_box journalctl -b -u switchd.service -o cat) || fail "cannot read switchd's journal"
! grep "cannot read this boot's id" <<<"$started_log" ||
  fail "switchd cannot read the boot id under its unit (above)"
ctl confirm bluetooth >/dev/null || fail "switchctl confirm failed"
say "restart: ok (a tried change survived it; the boot id is readable in the sandbox)"

# --- a reboot: switchd starts with the machine, and carries out what came due -----------
# Enabled for boot (WantedBy=multi-user.target): a timed value ends, and
# ExecWatch= reads the system, whether or not a client ever connects. The
# timed value is set, switchd stopped at once (before its deadline: the end
# must not come before the reboot), the machine halted and booted again
# after the deadline; switchd must be running before any client connects,
# and have carried the ending out.
[ "$(in_box systemctl is-enabled switchd.service)" = enabled ] ||
  fail "switchd.service is not enabled for boot: $(in_box systemctl is-enabled switchd.service)"
was=$(ctl --json get bluetooth | grep -o '"checked":[a-z]*')
timed=$( [ "$was" = '"checked":true' ] && echo off || echo on)
ctl "$timed" bluetooth --for 20s >/dev/null || fail "switchctl $timed bluetooth --for 20s failed"
deadline=$(( $(date +%s) + 20 ))
in_box systemctl stop switchd.socket switchd-varlink.socket switchd.service
[ "$(date +%s)" -lt "$deadline" ] || fail "stopping switchd took past the timed value's deadline"
halt
while [ "$(date +%s)" -le "$deadline" ]; do sleep 1; done  # until the deadline has passed
boot_box again
# Asked of systemd before any client connects: the boot started it.
until_ok 30 "switchd.service did not start at boot" is_active switchd.service
expired() { ctl history bluetooth --limit 1 | grep -q expiry; }
until_ok 30 "switchd started at boot did not carry out the timed value that had ended" expired
[ "$(ctl --json get bluetooth | grep -o '"checked":[a-z]*')" = "$was" ] ||
  fail "bluetooth did not come back to its value after the reboot: $(ctl get bluetooth)"
say "reboot: ok (switchd.service started with the machine; the timed value that ended while it was down was carried out)"

halt
say "ok in $((SECONDS - started)) s"
