#!/usr/bin/env bash
# Checks `make install` and `make uninstall` into scratch DESTDIRs, the way a
# package build runs them, against release binaries that are already built.
#
#   .ci/check-install.sh [SCRATCH_PATH]     (default .build; the binaries are
#                                            SCRATCH_PATH/release/switchd, switchctl)
#
# Build first: swift build -c release --scratch-path SCRATCH_PATH. This script
# never builds (SKIP_BUILD=1). It checks:
#   - the installed tree: switchctl in bin, switchd in sbin, the adapters
#     (rfkill-apply, rfkill-watch, nm-radio) in libexec/switchd, units with
#     @SBINDIR@/@BINDIR@/@SYSCONFDIR@ substituted, the shipped configuration under /etc/switchd
#     (naming the adapters where they were installed), sysusers.d (no
#     tmpfiles.d), bash completion, the man pages (built with scdoc, installed
#     here when missing) in share/man/manN, the Cockpit page, the polkit rule
#     for nm-radio and switchd's actions in /usr/share/polkit-1 (the only
#     place polkitd reads them, whatever the PREFIX), and nothing else;
#   - `make install` without PREFIX installs under /usr, the paths the shipped
#     configuration names;
#   - a reinstall keeps a configuration file the administrator changed (and one
#     they added) and still refreshes the units;
#   - uninstall removes everything install added, except those two files;
#   - PREFIX=/usr/local puts the binaries, adapters and units there, /etc stays
#     /etc, the polkit files stay in /usr/share/polkit-1.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
scratch=${1:-$repo/.build}
scratch=$(cd "$scratch" 2>/dev/null && pwd) || {
  echo "check-install: FAIL: no build directory '${1:-$repo/.build}'" >&2
  exit 1
}

fail() {
  echo "check-install: FAIL: $*" >&2
  exit 1
}

for tool in switchd switchctl; do
  [[ -x $scratch/release/$tool && -f $scratch/release/$tool ]] ||
    fail "no $scratch/release/$tool (build first: swift build -c release --scratch-path $scratch)"
done
command -v make >/dev/null || fail "make not found"
# `make install` builds the man pages with Debian's scdoc. Another apt-get
# may hold the dpkg lock (a fresh machine runs its own): wait for it.
if ! command -v scdoc >/dev/null; then
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq scdoc
fi

# The Makefile's variables are `?=`: one set in this environment would move
# the install. Only what is passed on make's command line counts here.
unset DESTDIR PREFIX SYSCONFDIR BINDIR SBINDIR LIBDIR LIBEXECDIR DATADIR UNITDIR SYSUSERSDIR TMPFILESDIR \
  BASHCOMPDIR MANDIR POLKITRULESDIR POLKITACTIONSDIR VARLINKDIR COCKPITDIR CONFDIR SWIFT_BIN_PATH \
  SWITCHD_BIN SWITCHCTL_BIN SKIP_BUILD MAKEFLAGS MFLAGS

work=$(mktemp -d "${TMPDIR:-/tmp}/check-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

# make TARGET DESTDIR [VAR=VALUE...]: runs it, shows its output, fails on error.
run_make() {
  local target=$1 destdir=$2
  shift 2
  local out
  echo "== make $target DESTDIR=$destdir $*"
  if ! out=$(make -C "$repo" --no-print-directory "$target" DESTDIR="$destdir" \
    SCRATCH_PATH="$scratch" SKIP_BUILD=1 "$@" 2>&1); then
    printf '%s\n' "$out" >&2
    fail "make $target exited non-zero"
  fi
  printf '%s\n' "$out" | sed 's/^/  /'
  if grep -q 'swift build' <<<"$out"; then
    fail "make $target ran swift build although SKIP_BUILD=1"
  fi
  last_output=$out
}

# What the shipped configuration installs: Config/switchd.conf,
# Config/switches.d/*.conf, Config/policy.d/*.conf (not *.example).
shipped_config() {
  (
    cd "$repo/Config"
    shopt -s nullglob
    printf '%s\n' switchd.conf switches.d/*.conf policy.d/*.conf
  ) | LC_ALL=C sort
}

# Every non-directory below $1, relative to it, sorted.
files_in() {
  (cd "$1" && find . ! -type d | sed 's|^\./||' | LC_ALL=C sort)
}

expect_mode() {
  local path=$1 mode=$2 actual
  actual=$(stat -c %a "$path")
  [[ $actual == "$mode" ]] || fail "$path has mode $actual, expected $mode"
}

expect_same() {
  cmp -s "$1" "$2" || fail "$2 differs from $1"
}

# man_page_of docs/man/switchd.8.scd -> man/man8/switchd.8 (below share/).
man_page_of() {
  local name=${1##*/}
  name=${name%.scd}
  printf 'man/man%s/%s\n' "${name##*.}" "$name"
}

# check_tree DESTDIR PREFIX: the tree install produced.
check_tree() {
  local dest=$1 prefix=$2
  local sbindir=$dest$prefix/sbin
  local unitdir=$dest$prefix/lib/systemd/system
  local confdir=$dest/etc/switchd

  # --- binaries: the built ones, executable, and they run ---
  local tool
  for tool in sbin/switchd bin/switchctl; do
    [[ -f $dest$prefix/$tool ]] || fail "$prefix/$tool was not installed"
    expect_mode "$dest$prefix/$tool" 755
    expect_same "$scratch/release/${tool#*/}" "$dest$prefix/$tool"
  done
  # --- apply commands: the shipped scripts, executable ---
  local script
  for script in "$repo"/libexec/*; do
    local installed=$dest$prefix/libexec/switchd/${script##*/}
    [[ -f $installed ]] || fail "$prefix/libexec/switchd/${script##*/} was not installed"
    expect_mode "$installed" 755
    expect_same "$script" "$installed"
  done
  local version
  version=$("$sbindir/switchd" --version) || fail "the installed switchd --version failed"
  [[ $version == switchd\ * ]] || fail "the installed switchd --version printed '$version'"

  # --- units: placeholders substituted with the real paths ---
  for unit in switchd.service switchd.socket switchd-varlink.socket; do
    [[ -f $unitdir/$unit ]] || fail "$prefix/lib/systemd/system/$unit was not installed"
    expect_mode "$unitdir/$unit" 644
    if grep -n '@[A-Z_]*@' "$unitdir/$unit"; then
      fail "$unit still has a placeholder after install"
    fi
    # Apart from the substitution, the shipped unit.
    diff <(sed -e "s|@SBINDIR@|$prefix/sbin|g" -e "s|@BINDIR@|$prefix/bin|g" \
      -e 's|@SYSCONFDIR@|/etc|g' "$repo/systemd/$unit") \
      "$unitdir/$unit" >/dev/null || fail "$unit is not the shipped unit with the paths substituted"
  done
  local exec_start
  exec_start=$(sed -n 's/^ExecStart=//p' "$unitdir/switchd.service")
  [[ $exec_start == "$prefix/sbin/switchd --config /etc/switchd"* ]] ||
    fail "ExecStart=$exec_start does not run $prefix/sbin/switchd --config /etc/switchd"
  [[ -x $dest${exec_start%% *} ]] || fail "ExecStart's ${exec_start%% *} is not installed"
  grep -qx 'ListenStream=/run/switchd/switchd.sock' "$unitdir/switchd.socket" ||
    fail "switchd.socket does not listen on /run/switchd/switchd.sock"

  # --- configuration: the shipped files, and it is valid ---
  [[ -d $confdir/switches.d && -d $confdir/policy.d ]] ||
    fail "/etc/switchd, switches.d or policy.d was not created"
  # The shipped files, naming the adapters where this install put them
  # (/usr/libexec/switchd/NAME in Config/).
  local f named
  while read -r f; do
    [[ -f $confdir/$f ]] || fail "/etc/switchd/$f was not installed"
    expect_mode "$confdir/$f" 644
    sed "s|/usr/libexec/switchd/|$prefix/libexec/switchd/|g" "$repo/Config/$f" | cmp -s - "$confdir/$f" ||
      fail "/etc/switchd/$f is not Config/$f with the adapters in $prefix/libexec/switchd"
  done < <(shipped_config)
  # Every adapter the installed configuration names (commented-out lines too:
  # they are what an administrator uncomments) is installed there.
  while read -r named; do
    [[ -x $dest$named ]] || fail "the installed configuration names $named, which is not installed"
  done < <(grep -rhoE '/[^[:space:]]*/libexec/switchd/[A-Za-z0-9._-]+' "$confdir" | sort -u)
  grep -rqE "$prefix/libexec/switchd/" "$confdir" ||
    fail "the installed configuration names no adapter in $prefix/libexec/switchd (is Config/ still naming them?)"
  local check
  check=$("$sbindir/switchd" --check-config "$confdir" 2>&1) ||
    fail "the installed configuration does not pass switchd --check-config:
$check"

  # --- sysusers.d (no tmpfiles.d: the units make the directories), bash completion ---
  expect_same "$repo/systemd/sysusers.d/switchd.conf" "$dest$prefix/lib/sysusers.d/switchd.conf"
  expect_same "$repo/completion/switchctl.bash" \
    "$dest$prefix/share/bash-completion/completions/switchctl"
  expect_mode "$dest$prefix/lib/sysusers.d/switchd.conf" 644
  expect_mode "$dest$prefix/share/bash-completion/completions/switchctl" 644
  # --- polkit: where polkitd (Debian 12) reads rules and actions, whatever the PREFIX ---
  local rule=$dest/usr/share/polkit-1/rules.d/50-switchd-nm-radio.rules
  local actions=$dest/usr/share/polkit-1/actions/io.switchd.policy
  [[ -f $rule && -f $actions ]] ||
    fail "with PREFIX=$prefix the polkit rule or actions are not in /usr/share/polkit-1, where polkitd reads them"
  expect_same "$repo/polkit/50-switchd-nm-radio.rules" "$rule"
  expect_mode "$rule" 644
  expect_same "$repo/polkit/io.switchd.policy" "$actions"
  expect_mode "$actions" 644
  # --- the varlink interface definition, where varlink tools look for it ---
  local idl=$dest$prefix/share/varlink/io.switchd.Switches.varlink
  expect_same "$repo/Sources/SwitchProtocol/io.switchd.Switches.varlink" "$idl"
  expect_mode "$idl" 644
  bash -n "$dest$prefix/share/bash-completion/completions/switchctl" ||
    fail "the installed bash completion has a syntax error"

  # --- man pages: each docs/man/NAME.N.scd as scdoc built it, in manN, and it renders ---
  local scd page
  for scd in "$repo"/docs/man/*.scd; do
    page=$(man_page_of "$scd")
    [[ -f $dest$prefix/share/$page ]] || fail "$prefix/share/$page was not installed"
    expect_mode "$dest$prefix/share/$page" 644
    expect_same "$scratch/man/${page##*/}" "$dest$prefix/share/$page"
    grep -q '^\.TH ' "$dest$prefix/share/$page" || fail "$prefix/share/$page is not a man page"
    if command -v man >/dev/null; then
      MANWIDTH=80 man -l "$dest$prefix/share/$page" >/dev/null 2>&1 ||
        fail "man -l cannot render the installed $prefix/share/$page"
    fi
  done

  # --- nothing else (no *.tmp left by the unit substitution, no README.conf.example) ---
  local expected actual
  expected=$(
    {
      printf '%s\n' "${prefix#/}/sbin/switchd" "${prefix#/}/bin/switchctl" \
        "${prefix#/}/lib/systemd/system/switchd.service" \
        "${prefix#/}/lib/systemd/system/switchd.socket" \
        "${prefix#/}/lib/systemd/system/switchd-varlink.socket" \
        "${prefix#/}/share/varlink/io.switchd.Switches.varlink" \
        "${prefix#/}/lib/sysusers.d/switchd.conf" \
        "${prefix#/}/share/bash-completion/completions/switchctl" \
        usr/share/polkit-1/rules.d/50-switchd-nm-radio.rules \
        usr/share/polkit-1/actions/io.switchd.policy
      for scd in "$repo"/docs/man/*.scd; do
        printf '%s\n' "${prefix#/}/share/$(man_page_of "$scd")"
      done
      (cd "$repo/libexec" && printf '%s\n' *) | sed "s|^|${prefix#/}/libexec/switchd/|"
      shipped_config | sed 's|^|etc/switchd/|'
      (cd "$repo/cockpit" && printf '%s\n' manifest.json *.html *.js *.css) |
        sed "s|^|${prefix#/}/share/cockpit/switchd/|"
    } | LC_ALL=C sort
  )
  actual=$(files_in "$dest")
  if [[ $actual != "$expected" ]]; then
    fail "the installed files are not the expected ones:
$(diff <(printf '%s\n' "$expected") <(printf '%s\n' "$actual") | grep '^[<>]' |
      sed -e 's/^</  missing:/' -e 's/^>/  unexpected:/')"
  fi
}

last_output=

# === 1. install into an empty DESTDIR, the default PREFIX (/usr) ==================
dest=$work/usr-root
mkdir "$dest"
run_make install "$dest"
check_tree "$dest" /usr
echo "install: ok ($(files_in "$dest" | wc -l) files, under /usr without PREFIX=)"

# === 2. reinstall over an administrator's changes =================================
conf=$dest/etc/switchd/switchd.conf
printf '\n# changed by the administrator\nLogLevel=debug\n' >>"$conf"
changed=$(cat "$conf")
local_conf=$dest/etc/switchd/switches.d/90-local.conf
printf '[local.feature]\nLabel=A local switch\nDefault=off\n' >"$local_conf"
# A unit edited in place (wrongly: /etc is for overrides) is a vendor file:
# the reinstall replaces it.
echo '# stale' >>"$dest/usr/lib/systemd/system/switchd.service"

run_make install "$dest" PREFIX=/usr
[[ $(cat "$conf") == "$changed" ]] || fail "reinstall overwrote the changed /etc/switchd/switchd.conf"
grep -q "keep.*etc/switchd/switchd.conf" <<<"$last_output" ||
  fail "reinstall did not say it kept /etc/switchd/switchd.conf"
[[ -f $local_conf ]] || fail "reinstall removed the administrator's switches.d/90-local.conf"
if grep -q '^# stale' "$dest/usr/lib/systemd/system/switchd.service"; then
  fail "reinstall did not replace the installed switchd.service"
fi
echo "reinstall: ok (kept the changed switchd.conf and the added 90-local.conf)"

# === 3. uninstall: everything install added, except the administrator's files =====
run_make uninstall "$dest" PREFIX=/usr
left=$(files_in "$dest")
expected_left=$(printf '%s\n' etc/switchd/switchd.conf etc/switchd/switches.d/90-local.conf |
  LC_ALL=C sort)
[[ $left == "$expected_left" ]] || fail "after uninstall, expected only the administrator's two files; found:
$left"
[[ $(cat "$conf") == "$changed" ]] || fail "uninstall changed the administrator's switchd.conf"
[[ -d $dest/etc/switchd/switches.d ]] || fail "uninstall removed a directory that still holds a file"
echo "uninstall: ok (kept the changed switchd.conf and 90-local.conf)"

# === 4. install then uninstall leaves nothing =====================================
dest=$work/clean-root
mkdir "$dest"
run_make install "$dest" PREFIX=/usr
run_make uninstall "$dest" PREFIX=/usr
left=$(files_in "$dest")
[[ -z $left ]] || fail "uninstall after a plain install left files:
$left"
[[ ! -e $dest/etc/switchd ]] || fail "uninstall left an empty /etc/switchd"
echo "install + uninstall: ok (no files left, /etc/switchd removed)"

# === 5. PREFIX=/usr/local ===========================================================
dest=$work/local-root
mkdir "$dest"
run_make install "$dest" PREFIX=/usr/local
check_tree "$dest" /usr/local
run_make uninstall "$dest" PREFIX=/usr/local
[[ -z $(files_in "$dest") ]] || fail "uninstall with PREFIX=/usr/local left files"
echo "PREFIX=/usr/local: ok"

echo "check-install: ok"
