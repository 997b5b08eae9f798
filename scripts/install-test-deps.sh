#!/usr/bin/env bash
# Install everything the test suite needs, idempotently: Debian packages for a real Secret
# Service (gnome-keyring, dbus, libsecret-tools), strace and a network namespace (util-linux, iproute2),
# a real browser for the consistency board (chromium, driven by Playwright: never `playwright install`,
# which downloads a browser of its own), a virtualenv with ccs and its test extras,
# and the pinned npm clients (claude, codex) in .cache/clients.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v gnome-keyring-daemon >/dev/null || need_apt+=(gnome-keyring)
command -v dbus-run-session >/dev/null || need_apt+=(dbus)
command -v dbus-monitor >/dev/null || need_apt+=(dbus-bin)  # watches the Secret Service calls a lookup makes
command -v secret-tool >/dev/null || need_apt+=(libsecret-tools)
command -v strace >/dev/null || need_apt+=(strace)      # traces every connect() of the real clients
command -v unshare >/dev/null || need_apt+=(util-linux) # a private network namespace for them
command -v ip >/dev/null || need_apt+=(iproute2)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)  # tests/browser.py opens the board in it
[ -x /usr/bin/pipx ] || need_apt+=(pipx)  # the README's install command, tested on the system Python
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing Debian packages: ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 | grep -v '^WARNING: Location' || true
.venv/bin/python -c 'import ccswitch_tui, textual, keyring, pytest' # fail loudly if the install did not take

bash scripts/install-clients.sh
