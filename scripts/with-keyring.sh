#!/usr/bin/env bash
# Run a command inside a private D-Bus session with an unlocked gnome-keyring Secret Service,
# with HOME and the XDG dirs in a temporary folder so no real keyring or config is touched.
set -euo pipefail
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ccs-test-home.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export CCS_TEST_REAL_HOME="${HOME:-}"
export HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/.config" XDG_DATA_HOME="$tmp/home/.local/share" \
       XDG_STATE_HOME="$tmp/home/.local/state" XDG_CACHE_HOME="$tmp/home/.cache"
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$XDG_CACHE_HOME"
unset CCS_HOME
# `dbus-run-session` ends the bus (and the keyring daemon) when the command exits.
dbus-run-session -- sh -c '
  printf %s ccs-test | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1
  exec "$@"' sh "$@"
