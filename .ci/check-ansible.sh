#!/usr/bin/env bash
# Runs the Ansible role (contrib/ansible/roles/switchd) with ansible-playbook
# on this machine against a switchd installed in a root directory, with the
# role's paths pointed into it (the role's switchd_config_dir, switchd_binary,
# switchd_switchctl and switchd_socket). .ci/check-deb.sh calls it with the
# daemon running in its debootstrap root:
#
#   .ci/check-ansible.sh ROOT SOCKET        (SOCKET as seen inside ROOT)
#
# Checks: the first run changes policy.d (a hold with a reason, a disabled
# switch, a removed policy) and the daemon shows them, with policySource; the
# second run changes nothing; a broken variable fails the play and leaves
# policy.d and the running configuration as they were; so does a policy.d
# its group may write to (which switchd would refuse), on every run until it
# is fixed; and files in place that switchd never loaded (a run that failed
# or stopped before the reload) are loaded by the next run, which changes
# no file.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=$(realpath "$1")
sock=$2
tests=$repo/contrib/ansible/tests

say() { printf 'check-ansible: %s\n' "$*"; }
fail() {
  echo "check-ansible: FAIL: $*" >&2
  exit 1
}
command -v ansible-playbook >/dev/null || fail "ansible-playbook not found (install the Debian package ansible-core)"

work=$(mktemp -d "${TMPDIR:-/tmp}/check-ansible.XXXXXX")
trap 'rm -rf "$work"' EXIT
export ANSIBLE_ROLES_PATH=$repo/contrib/ansible/roles ANSIBLE_NOCOLOR=1 \
  ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_HOME=$work/ansible-home \
  ANSIBLE_LOCAL_TEMP=$work/ansible-tmp ANSIBLE_PYTHON_INTERPRETER=auto_silent

printf '%s\n' "{\"switchd_install_package\": false," \
  "\"switchd_config_dir\": \"$root/etc/switchd\"," \
  "\"switchd_binary\": \"$root/usr/sbin/switchd\"," \
  "\"switchd_switchctl\": \"$root/usr/bin/switchctl\"," \
  "\"switchd_socket\": \"$root$sock\"}" >"$work/paths.json"

# play VARS-FILE [MORE-VARS-FILE]: runs the test playbook; its output is in
# $work/play.out.
play() {
  local more=()
  [ $# -lt 2 ] || more=(-e "@$2")
  ansible-playbook -i localhost, "$tests/test.yml" -e "@$work/paths.json" -e "@$1" "${more[@]}" \
    >"$work/play.out" 2>&1
}
changed_count() { sed -n 's/^localhost *: .*changed=\([0-9]*\).*/\1/p' "$work/play.out"; }
# Whether the run reloaded switchd: "Reload switchd" (a task, or a handler)
# ran and changed.
reloaded() {
  awk '/^(TASK|RUNNING HANDLER) \[switchd : Reload switchd\]/ { task = 1; next }
       task && NF { found = /^changed:/; exit } END { exit !found }' "$work/play.out"
}
ctl() { chroot "$root" switchctl --socket "$sock" "$@"; }
policy=$root/etc/switchd/policy.d

# An older policy the fleet variables remove.
printf '[airplane-mode]\nReadOnly=yes\nReason=An old rule.\n' >"$policy/40-old.conf"
ctl reload >/dev/null
ctl --json get airplane-mode | grep -q '"heldBy":"policy"' || fail "40-old.conf did not hold airplane-mode"

# --- first run: changes, and the daemon shows them -------------------------------
play "$tests/fleet.yml" || {
  cat "$work/play.out" >&2
  fail "the first run failed"
}
[ "$(changed_count)" -gt 0 ] || fail "the first run changed nothing"
reloaded || fail "the first run did not reload switchd"
[ -f "$policy/50-fleet.conf" ] && [ ! -e "$policy/40-old.conf" ] ||
  fail "policy.d after the first run: $(ls "$policy")"
bt=$(ctl --json get bluetooth)
for field in '"readOnly":true' '"heldBy":"policy"' '"checked":false' \
  '"readOnlyReason":"Bluetooth is turned off by your organisation."' '"policySource":"50-fleet.conf:'; do
  grep -qF "$field" <<<"$bt" || fail "bluetooth lacks $field after the first run: $bt"
done
mail=$(ctl --json get email.marketing)
grep -qF '"disabledBy":"policy"' <<<"$mail" || fail "email.marketing is not disabled by policy: $mail"
ctl --json get airplane-mode | grep -qF '"heldBy":null' || fail "removing 40-old.conf did not free airplane-mode"
say "first run: changed=$(changed_count); bluetooth held with its reason and policySource"

# --- second run: no change -------------------------------------------------------
play "$tests/fleet.yml" || {
  cat "$work/play.out" >&2
  fail "the second run failed"
}
[ "$(changed_count)" = 0 ] || {
  cat "$work/play.out" >&2
  fail "the second run reported changed=$(changed_count)"
}
! reloaded || fail "the second run reloaded switchd"
say "second run: changed=0"

# --- a broken variable: the play fails, nothing moves ----------------------------
before=$(cat "$policy/50-fleet.conf")
rev=$(ctl status | sed -n 's/^revision: *//p')
if play "$tests/broken.yml"; then
  cat "$work/play.out" >&2
  fail "a broken variable did not fail the play"
fi
grep -q 'check-config' "$work/play.out" || fail "the broken run did not fail at switchd --check-config"
[ "$(cat "$policy/50-fleet.conf")" = "$before" ] || fail "the broken run changed 50-fleet.conf"
ctl --json get bluetooth | grep -qF '"readOnlyReason":"Bluetooth is turned off by your organisation."' ||
  fail "the broken run changed the running policy"
[ "$(ctl status | sed -n 's/^revision: *//p')" = "$rev" ] || fail "the broken run changed a switch"
if find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'ansible.*switchd-policy' | grep -q .; then
  fail "the broken run left its staging directory"
fi
say "broken variable: the play failed at check-config; policy.d and the daemon unchanged"

# --- a policy.d its group may write to: refused before any file moves -----------
# switchd refuses such a directory (it trusts only root's, written by no one
# else). The check runs on a copy that keeps owners and modes: a copy that
# did not (cp -R) passed, the file was put in place, the reload was refused,
# and the next run, finding the file in place, reported nothing to do while
# switchd kept the old policy.
chmod g+w "$policy"
for run in first second; do
  if play "$tests/reworded.yml"; then
    cat "$work/play.out" >&2
    chmod g-w "$policy"
    fail "the $run run with a group-writable policy.d did not fail"
  fi
  grep -q 'Check the copy with switchd --check-config' "$work/play.out" &&
    grep -q 'not trusted' "$work/play.out" || {
    cat "$work/play.out" >&2
    chmod g-w "$policy"
    fail "the $run run with a group-writable policy.d did not fail at switchd --check-config"
  }
  [ "$(cat "$policy/50-fleet.conf")" = "$before" ] || {
    chmod g-w "$policy"
    fail "the $run run put 50-fleet.conf in place although switchd would refuse policy.d"
  }
done
chmod g-w "$policy"
ctl --json get bluetooth | grep -qF '"readOnlyReason":"Bluetooth is turned off by your organisation."' ||
  fail "the refused runs changed the running policy"
play "$tests/reworded.yml" || {
  cat "$work/play.out" >&2
  fail "the run after policy.d was fixed failed"
}
reloaded || fail "the run after policy.d was fixed did not reload switchd"
ctl --json get bluetooth | grep -qF '"readOnlyReason":"Bluetooth is off on managed devices."' ||
  fail "switchd does not run the reworded policy after the fixed run: $(ctl --json get bluetooth)"
say "group-writable policy.d: two runs failed at check-config, nothing moved; fixed, the next run put it in place and reloaded"

# --- files in place that switchd never loaded: the next run reloads -------------
# A run that puts the files in place and ends before switchd loads them (here
# it cannot reach switchd: exit 7, "not running"; a failed later task or a
# refused reload did the same) leaves switchd on the old policy. The next run
# changes no file, and must still reload.
printf '{"switchd_socket": "%s"}\n' "$root/run/no-switchd-here.sock" >"$work/nosocket.json"
play "$tests/fleet.yml" "$work/nosocket.json" || {
  cat "$work/play.out" >&2
  fail "the run that cannot reach switchd failed"
}
! reloaded || fail "the run that cannot reach switchd reloaded it"
ctl --json get bluetooth | grep -qF '"readOnlyReason":"Bluetooth is off on managed devices."' ||
  fail "switchd changed policy without a reload"
play "$tests/fleet.yml" || {
  cat "$work/play.out" >&2
  fail "the run after the unreloaded one failed"
}
[ "$(changed_count)" = 1 ] && reloaded || {
  cat "$work/play.out" >&2
  fail "the run after files were put in place unloaded changed $(changed_count) and did not (only) reload switchd"
}
ctl --json get bluetooth | grep -qF '"readOnlyReason":"Bluetooth is turned off by your organisation."' ||
  fail "switchd still runs the policy from before the unloaded files: $(ctl --json get bluetooth)"
play "$tests/fleet.yml" && [ "$(changed_count)" = 0 ] && ! reloaded || {
  cat "$work/play.out" >&2
  fail "the run after that was not a no-op"
}
say "files never loaded: the next run reloaded switchd (changed=1: the reload only), the one after changed nothing"
