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
# policy.d and the running configuration as they were.
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

# play VARS-FILE: runs the test playbook; its output is in $work/play.out.
play() {
  ansible-playbook -i localhost, "$tests/test.yml" -e "@$work/paths.json" -e "@$1" \
    >"$work/play.out" 2>&1
}
changed_count() { sed -n 's/^localhost *: .*changed=\([0-9]*\).*/\1/p' "$work/play.out"; }
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
grep -q 'RUNNING HANDLER \[switchd : Reload switchd\]' "$work/play.out" ||
  fail "the first run did not reload switchd"
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
! grep -q 'RUNNING HANDLER' "$work/play.out" || fail "the second run reloaded switchd"
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
