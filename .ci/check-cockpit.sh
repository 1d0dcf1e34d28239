#!/usr/bin/env bash
# Browser tests of the Cockpit "Switches" page (cockpit/test/): the client
# module's unit tests under Node, then Playwright for Python driving Debian's
# Chromium against a real switchd and a real cockpit-ws (as root and as an
# ordinary account). Run from .ci/run after the debug build; SWITCHD_BIN and
# SWITCHCTL_BIN pick other binaries.
#
# Playwright is pinned and never downloads a browser (`playwright install` is
# never run): the tests launch /usr/bin/chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

PLAYWRIGHT_VERSION=1.65.2
PYTEST_VERSION=8.3.5
VENV="${COCKPIT_TEST_VENV:-/var/cache/switchd-ci/cockpit-venv}"

need=()
[ -x /usr/lib/cockpit/cockpit-ws ] || need+=(cockpit-ws)
command -v cockpit-bridge >/dev/null || need+=(cockpit-bridge)
if [ ${#need[@]} -gt 0 ]; then
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}"
fi
need=()
command -v chromium >/dev/null || need+=(chromium)
/usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv python3-pip)
command -v node >/dev/null || need+=(nodejs)
command -v setpriv >/dev/null || need+=(util-linux)
command -v useradd >/dev/null || need+=(passwd)
if [ ${#need[@]} -gt 0 ]; then
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${need[@]}"
fi

if ! "$VENV/bin/python" -c "import playwright, pytest, importlib.metadata as m; \
assert m.version('playwright') == '$PLAYWRIGHT_VERSION' and m.version('pytest') == '$PYTEST_VERSION'" 2>/dev/null; then
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "playwright==$PLAYWRIGHT_VERSION" "pytest==$PYTEST_VERSION"
fi

echo "client module (node --test)"
node --test cockpit/test/

echo "browser tests (pytest, Playwright $PLAYWRIGHT_VERSION, $(chromium --version 2>/dev/null || echo chromium))"
set +e
PYTHONDONTWRITEBYTECODE=1 "$VENV/bin/python" -m pytest -p no:cacheprovider -q cockpit/test
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "check-cockpit: pytest collected no tests" >&2
  exit 1
fi
echo "check-cockpit: $(( $(date +%s) - started )) s"
exit "$status"
