#!/usr/bin/env bash
# Builds the Debian package from the committed tree and tests it on a machine
# that has never seen Swift: a minimal Debian root (debootstrap minbase, no
# python3 either, as python3 would bring libsqlite3 and hide a missing
# Depends).
#
#   .ci/check-deb.sh            (as root; installs the tools it needs)
#
# In order: the man pages (groff -ww and man --warnings clean), the package
# (dpkg-buildpackage -us -uc -b in a clone of HEAD), lintian (no errors), the
# maintainer scripts (an upgrade restarts only the service, never a socket),
# then in the root, which has systemd-tmpfiles (systemd-standalone-tmpfiles)
# but no systemd: the package installed with apt (./switchd_*.deb), switchd started directly
# as root with the shipped configuration, switchctl list, toggle,
# watch, lock and reload; the Ansible role (contrib/ansible, run on this
# machine against the root's paths); an upgrade over itself that keeps a
# changed conffile; remove; purge; and what is left after each; then an
# install where a group switchd already exists (useradd without
# systemd-sysusers), and its purge.
#
# Cached under $SWITCHD_CI_CACHE (default /var/cache/switchd-ci), outside the
# clone: the root as a tarball keyed by the ISO week (a new one each week
# picks up Debian's updates), and the build tree at a fixed path (SwiftPM's
# build directory cannot be moved). SWITCHD_DEB=FILE tests that package
# instead of building one.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${SWITCHD_CI_CACHE:-/var/cache/switchd-ci}
export PATH="/opt/swift/usr/bin:$PATH"
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
started=$SECONDS

say() { printf 'check-deb: %s\n' "$*"; }
fail() {
  echo "check-deb: FAIL: $*" >&2
  exit 1
}
elapsed() { say "$1 ($((SECONDS - started)) s so far)"; }

# --- tools ---------------------------------------------------------------------
# (build-deb.sh and cached-root.sh install their own.)
need=()
command -v lintian >/dev/null || need+=(lintian)
command -v groff >/dev/null || need+=(groff-base)
command -v man >/dev/null || need+=(man-db)
command -v ansible-playbook >/dev/null || need+=(ansible-core)
command -v objdump >/dev/null || need+=(binutils)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${need[@]}" >/dev/null
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/check-deb.XXXXXX")
root=$work/root
pids=()
mounted=()
cleanup() {
  local pid m
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  done
  for m in "${mounted[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" || true; done
  rm -rf "$work"
}
trap cleanup EXIT
# Once a process has been waited for, its pid may belong to someone else:
# drop it from the list the cleanup signals.
forget() {
  local keep=() pid
  for pid in "${pids[@]}"; do [ "$pid" = "$1" ] || keep+=("$pid"); done
  pids=("${keep[@]}")
}
mkdir -p "$cache"

# --- the package ---------------------------------------------------------------
if [ -n "${SWITCHD_DEB:-}" ]; then
  deb=$(realpath "$SWITCHD_DEB")
else
  # Built in a clone of HEAD (what a fresh clone builds), cached per commit.
  deb=$(bash "$repo/.ci/build-deb.sh" HEAD) || fail "the package did not build"
  src=$cache/build/switchd
fi
cp "$deb" "$work/"
deb=$work/$(basename "$deb")
version=$(dpkg-deb -f "$deb" Version)
say "package: $(basename "$deb") ($(stat -c %s "$deb") bytes), Depends: $(dpkg-deb -f "$deb" Depends)"

# --- lintian ---------------------------------------------------------------------
lintian_rc=0
lintian --display-info --fail-on error "$deb" >"$work/lintian.out" 2>&1 || lintian_rc=$?
lintian_out=$(grep -v 'root privileges' "$work/lintian.out" || true)
[ $lintian_rc -eq 0 ] || fail "lintian reported errors (exit $lintian_rc):
$lintian_out"
say "lintian: no errors; $(grep -c '^W:' <<<"$lintian_out" || true) warnings, $(grep -c '^I:' <<<"$lintian_out" || true) informational tags"
grep '^W:' <<<"$lintian_out" || true

# --- contents: static Swift runtime, man pages -------------------------------------
x=$work/contents
dpkg-deb -x "$deb" "$x"
for bin in usr/sbin/switchd usr/bin/switchctl; do
  [ -x "$x/$bin" ] || fail "the package has no /$bin"
  if objdump -p "$x/$bin" | grep -E 'NEEDED +libswift'; then
    fail "/$bin links the Swift runtime dynamically"
  fi
done
for adapter in rfkill-apply rfkill-watch nm-radio; do
  [ -x "$x/usr/libexec/switchd/$adapter" ] || fail "the package has no /usr/libexec/switchd/$adapter"
done
[ -f "$x/usr/share/polkit-1/rules.d/50-switchd-nm-radio.rules" ] ||
  fail "the package has no /usr/share/polkit-1/rules.d/50-switchd-nm-radio.rules"
[ -f "$x/usr/share/polkit-1/actions/io.switchd.policy" ] ||
  fail "the package has no /usr/share/polkit-1/actions/io.switchd.policy"
for page in man8/switchd.8 man1/switchctl.1 man5/switchd.conf.5; do
  f=$x/usr/share/man/$page.gz
  [ -f "$f" ] || fail "the package has no /usr/share/man/$page.gz"
  warnings=$( { zcat "$f" | groff -ww -z -man; } 2>&1; MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
  [ -z "$warnings" ] || fail "$page has warnings:
$warnings"
done
# The Cockpit page, when the tree has one (its tests are not installed).
if [ -n "${src:-}" ] && [ -f "$src/cockpit/manifest.json" ]; then
  for f in $(cd "$src/cockpit" && ls manifest.json *.html *.js *.css 2>/dev/null); do
    [ -f "$x/usr/share/cockpit/switchd/$f" ] || fail "the package lacks the Cockpit page's $f"
  done
  say "the Cockpit page is in /usr/share/cockpit/switchd"
fi
say "binaries need no Swift library; man pages clean"

# --- maintainer scripts: an upgrade restarts the service, never a socket --------
# A socket unit that is stopped or restarted unlinks its path and binds a new
# socket there: clients connecting meanwhile are refused (ConnectionReset,
# ENOENT), and starting it while the service runs fails ("Socket service
# switchd.service already active, refusing"). So: no preinst stops anything;
# the postinst starts the sockets (a no-op when they listen) and
# try-restarts switchd.service alone; the prerm stops them only on remove.
# (dh_installsystemd, following the service's Also=, put the sockets into the
# postinst's try-restart: debian/rules.)
scripts=$work/control
dpkg-deb -e "$deb" "$scripts"
if [ -f "$scripts/preinst" ] && grep -nE 'deb-systemd-invoke|systemctl' "$scripts/preinst" | grep -v daemon-reload; then
  fail "the preinst stops or restarts a unit (above): an upgrade would take the sockets down"
fi
invokes=$(grep -E '^[[:space:]]*deb-systemd-invoke' "$scripts/postinst" | sed 's/>.*//; s/[[:space:]]*$//; s/^[[:space:]]*//' || true)
while read -r line; do
  case "$line" in
    "deb-systemd-invoke start "*) ;;
    "deb-systemd-invoke try-restart switchd.service" | "deb-systemd-invoke try-restart 'switchd.service'") ;;
    *) fail "the postinst runs '$line': only the sockets' start and switchd.service's try-restart may run on an upgrade" ;;
  esac
done <<<"$invokes"
grep -qE "^deb-systemd-invoke try-restart '?switchd.service'?$" <<<"$invokes" ||
  fail "the postinst never try-restarts switchd.service: an upgrade would leave the old switchd running"
if [ -f "$scripts/prerm" ]; then
  grep -B3 -E '^[[:space:]]*deb-systemd-invoke' "$scripts/prerm" | grep -q '"$1" = remove' ||
    ! grep -qE '^[[:space:]]*deb-systemd-invoke' "$scripts/prerm" ||
    fail "the prerm stops units other than on remove"
fi
# No tmpfiles.d entry: systemd-tmpfiles applies one without systemd as PID 1
# too (the postinst's `systemd-tmpfiles --create`), making /var/lib/switchd
# the user switchd's where switchd is run by hand as root, which it refuses.
! dpkg-deb -c "$deb" | grep -F '/tmpfiles.d/' || fail "the package ships a tmpfiles.d entry (above)"
! grep -n 'systemd-tmpfiles' "$scripts/postinst" | grep -v '^[0-9]*:[[:space:]]*#' ||
  fail "the postinst runs systemd-tmpfiles (above)"
say "maintainer scripts: upgrades try-restart switchd.service only; sockets stopped only on remove; no tmpfiles"

# --- the root -------------------------------------------------------------------
tarball=$(bash "$repo/.ci/cached-root.sh" minbase) || fail "no root"
mkdir "$root"
tar -C "$root" --numeric-owner -xf "$tarball"
cp /etc/resolv.conf "$root/etc/resolv.conf"
[ -z "$(find "$root" -name 'libswift*' -print -quit)" ] || fail "the root has a Swift library"
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
in_root() { chroot "$root" "$@"; }

in_root sh -c '! command -v python3 >/dev/null' || fail "the root has python3"
if in_root dpkg -s libsqlite3-0 >/dev/null 2>&1; then fail "the root already has libsqlite3-0"; fi
# systemd-tmpfiles without systemd, as in a container or chroot of a full
# system: what the package does there must leave switchd run by hand as root
# working (README, "Installing from the Debian package"). Not
# systemd-sysusers: the postinst's useradd path is the one tested here.
in_root apt-get -o DPkg::Lock::Timeout=600 update -qq
in_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq systemd-standalone-tmpfiles >"$work/tmpfiles.log" 2>&1 || {
  cat "$work/tmpfiles.log" >&2
  fail "cannot install systemd-standalone-tmpfiles in the root"
}
in_root sh -c 'command -v systemd-tmpfiles >/dev/null && ! command -v systemd-sysusers >/dev/null' ||
  fail "the root should have systemd-tmpfiles and no systemd-sysusers"
elapsed "root ready"

# --- install ----------------------------------------------------------------------
cp "$deb" "$root/tmp/"
in_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq "./tmp/$(basename "$deb")" >"$work/install.log" 2>&1 || {
  cat "$work/install.log" >&2
  fail "installing ./$(basename "$deb") with apt failed in the root"
}
in_root dpkg -s libsqlite3-0 >/dev/null 2>&1 || fail "installing the package did not bring libsqlite3-0"
for bin in /usr/sbin/switchd /usr/bin/switchctl; do
  libs=$(in_root ldd "$bin")
  ! grep -q 'not found\|libswift' <<<"$libs" || fail "$bin in the root: $libs"
done
in_root getent passwd switchd >/dev/null || fail "no user switchd after install"
in_root getent group switchd-admin >/dev/null || fail "no group switchd-admin after install"
[ ! -e "$root/var/lib/switchd" ] ||
  fail "the package made /var/lib/switchd (StateDirectory= or switchd itself makes it)"
[ -L "$root/etc/systemd/system/sockets.target.wants/switchd.socket" ] ||
  fail "switchd.socket was not enabled (no sockets.target.wants link)"
# At boot too: what ends at a time and ExecWatch= need switchd running.
[ -L "$root/etc/systemd/system/multi-user.target.wants/switchd.service" ] ||
  fail "switchd.service was not enabled for boot (no multi-user.target.wants link)"
in_root dpkg-query -W -f='${Conffiles}\n' switchd | grep -q ' /etc/switchd/switchd.conf ' ||
  fail "/etc/switchd/switchd.conf is not a conffile"
in_root switchd --check-config /etc/switchd >/dev/null || fail "the shipped configuration does not check"
elapsed "installed"

# --- work it --------------------------------------------------------------------
sock=/run/switchd/switchd.sock
start_daemon() {
  chroot "$root" /usr/sbin/switchd --config /etc/switchd >>"$work/switchd.log" 2>&1 &
  daemon=$!
  pids+=("$daemon")
  local deadline=$((SECONDS + 60))
  until in_root switchctl status >/dev/null 2>&1; do
    kill -0 "$daemon" 2>/dev/null || {
      cat "$work/switchd.log" >&2
      fail "switchd exited at start"
    }
    [ $SECONDS -lt $deadline ] || fail "switchd did not answer within 60 s"
    sleep 0.1
  done
}
stop_daemon() {
  kill -TERM "$daemon"
  local status=0
  wait "$daemon" || status=$?
  forget "$daemon"
  [ "$status" -eq 0 ] || fail "switchd exited non-zero on SIGTERM"
}
revision() { in_root switchctl status | sed -n 's/^revision: *//p'; }

start_daemon
[ -S "$root$sock" ] || fail "no socket at $sock"
[ "$(in_root stat -c '%a %U' /var/lib/switchd)" = "700 root" ] ||
  fail "/var/lib/switchd is not 0700 root: $(in_root stat -c '%a %U' /var/lib/switchd)"
list=$(in_root switchctl list)
grep -q '^wifi' <<<"$list" && grep -q '^bluetooth' <<<"$list" || fail "switchctl list: $list"
before=$(in_root switchctl get wifi)
rev=$(revision)
# A watcher that starts after the change still sees it (--since).
in_root switchctl toggle wifi >/dev/null
after=$(in_root switchctl get wifi)
[ "$before" != "$after" ] || fail "toggle wifi left it $after"
: >"$work/watch.out"
chroot "$root" switchctl watch wifi --since "$rev" >"$work/watch.out" 2>&1 &
watcher=$!
pids+=("$watcher")
deadline=$((SECONDS + 30))
until grep -q wifi "$work/watch.out"; do
  [ $SECONDS -lt $deadline ] || fail "switchctl watch printed no change: $(cat "$work/watch.out")"
  sleep 0.1
done
kill -TERM "$watcher"
status=0
wait "$watcher" || status=$?
forget "$watcher"
[ "$status" -eq 0 ] || fail "switchctl watch did not exit 0 on SIGTERM"
# lock as root; a human account then cannot change it (exit 3, read-only).
in_root switchctl lock bluetooth --checked on --reason "Locked by CI" >/dev/null
in_root useradd --uid 1500 --create-home alice
set +e
in_root setpriv --reuid=1500 --regid=1500 --clear-groups switchctl off bluetooth >/dev/null 2>&1
status=$?
set -e
[ $status -eq 3 ] || fail "a user's 'switchctl off bluetooth' on a locked switch exited $status, not 3"
in_root switchctl why bluetooth | grep -q "Locked by CI" || fail "switchctl why bluetooth does not give the reason"
in_root switchctl reload >/dev/null || fail "switchctl reload failed"
say "list, toggle, watch, lock, reload: ok"

# --- the Ansible role -------------------------------------------------------------
bash "$repo/.ci/check-ansible.sh" "$root" "$sock"
elapsed "ansible role checked"

# --- upgrade over itself, keeping a changed conffile -------------------------------
conf=$root/etc/switchd/switchd.conf
# bluetooth's hold and last change as they are now (the Ansible role's
# policy replaced the lock above): the same after the upgrade.
held=$(in_root switchctl why bluetooth)
printf '# changed by the administrator\n' >>"$conf"
changed=$(sha256sum <"$conf")
# The same package as a newer version whose shipped switchd.conf changed too:
# dpkg keeps the administrator's file and puts the new one beside it.
up=$work/upgrade
dpkg-deb -R "$deb" "$up"
sed -i "s/^Version: .*/Version: $version+ci1/" "$up/DEBIAN/control"
printf '# a comment added upstream\n' >>"$up/etc/switchd/switchd.conf"
dpkg-deb -b "$up" "$root/tmp/switchd_$version+ci1.deb" >/dev/null
in_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq -o Dpkg::Options::=--force-confold \
  "./tmp/switchd_$version+ci1.deb" >"$work/upgrade.log" 2>&1 || {
  cat "$work/upgrade.log" >&2
  fail "the upgrade failed"
}
[ "$(in_root dpkg-query -W -f='${Version}' switchd)" = "$version+ci1" ] || fail "not upgraded"
[ "$(sha256sum <"$conf")" = "$changed" ] || fail "the upgrade replaced the changed switchd.conf"
[ -f "$conf.dpkg-dist" ] || fail "the upgrade did not leave the new switchd.conf as .dpkg-dist"
stop_daemon
start_daemon
[ "$(in_root switchctl get wifi)" = "$after" ] || fail "wifi's value did not survive the upgrade"
[ "$(in_root switchctl why bluetooth)" = "$held" ] || fail "bluetooth's hold or last change did not survive the upgrade:
$(diff <(echo "$held") <(in_root switchctl why bluetooth))"
stop_daemon
say "upgrade to $version+ci1: ok (changed conffile kept, values and holds kept)"

# --- remove, purge ------------------------------------------------------------------
in_root apt-get -o DPkg::Lock::Timeout=600 remove -y -qq switchd >"$work/remove.log" 2>&1 || {
  cat "$work/remove.log" >&2
  fail "apt-get remove failed"
}
for gone in /usr/sbin/switchd /usr/bin/switchctl /lib/systemd/system/switchd.service \
  /usr/share/man/man8/switchd.8.gz /usr/lib/sysusers.d/switchd.conf; do
  [ ! -e "$root$gone" ] || fail "remove left $gone"
done
[ "$(sha256sum <"$conf")" = "$changed" ] || fail "remove did not keep the changed switchd.conf"
[ -f "$root/var/lib/switchd/switches.db" ] || fail "remove did not keep the database"
say "remove: ok (kept /etc/switchd and the database)"

in_root apt-get -o DPkg::Lock::Timeout=600 purge -y -qq switchd >"$work/purge.log" 2>&1 || {
  cat "$work/purge.log" >&2
  fail "apt-get purge failed"
}
for gone in /etc/switchd /var/lib/switchd /run/switchd \
  /etc/systemd/system/sockets.target.wants/switchd.socket; do
  [ ! -e "$root$gone" ] && [ ! -L "$root$gone" ] || fail "purge left $gone"
done
! in_root getent passwd switchd >/dev/null || fail "purge left the user switchd"
! in_root getent group switchd-admin >/dev/null || fail "purge left the group switchd-admin"
if in_root dpkg -s switchd >/dev/null 2>&1; then fail "dpkg still knows switchd after purge"; fi
left=$(grep -rl switchd "$root/etc" "$root/var/lib/systemd" 2>/dev/null | grep -v '^'"$root"'/etc/\(passwd\|group\|shadow\|gshadow\)-$' || true)
[ -z "$left" ] || fail "purge left files that name switchd:
$left"
say "purge: ok (nothing left)"

# --- install where a group switchd exists ---------------------------------------------
# An administrator made it (for the udev rule in docs/configuration.md), or a
# purge's groupdel failed: without systemd-sysusers the postinst's useradd
# must make the user switchd in that group (useradd --user-group exits 9).
in_root groupadd --system switchd
gid=$(in_root getent group switchd | cut -d: -f3)
in_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq "./tmp/$(basename "$deb")" >"$work/install2.log" 2>&1 || {
  cat "$work/install2.log" >&2
  fail "installing with an existing group switchd failed"
}
[ "$(in_root id -g switchd)" = "$gid" ] ||
  fail "the user switchd is not in the existing group switchd ($gid): $(in_root id switchd)"
in_root apt-get -o DPkg::Lock::Timeout=600 purge -y -qq switchd >"$work/purge2.log" 2>&1 || {
  cat "$work/purge2.log" >&2
  fail "apt-get purge failed (after the install with an existing group)"
}
! in_root getent passwd switchd >/dev/null || fail "the second purge left the user switchd"
say "an existing group switchd: the user joined it (gid $gid); purged"

say "ok in $((SECONDS - started)) s"
