#!/usr/bin/env bash
# Install the pinned real clients into .cache/clients (used by the tests and the benchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."
CLAUDE_VERSION=2.1.332
CODEX_VERSION=0.171.0
GEMINI_VERSION=0.61.0
OPENCODE_VERSION=1.18.33
# Kilo Code CLI: its Linux binary is the optional dependency @kilocode/cli-linux-x64 of the same version;
# 7.8.1 names a binary package the registry does not have (npm then installs it without a binary)
KILO_VERSION=7.7.7
QWEN_VERSION=0.24.4
dest=.cache/clients
have() { [ -x "$dest/node_modules/.bin/$1" ] && grep -q "\"version\": \"$2\"" "$dest/node_modules/$3/package.json" 2>/dev/null; }
if have claude "$CLAUDE_VERSION" @anthropic-ai/claude-code && have codex "$CODEX_VERSION" @openai/codex \
   && have gemini "$GEMINI_VERSION" @google/gemini-cli && have opencode "$OPENCODE_VERSION" opencode-ai \
   && have kilo "$KILO_VERSION" @kilocode/cli && "$dest/node_modules/.bin/kilo" --version >/dev/null 2>&1 \
   && have qwen "$QWEN_VERSION" @qwen-code/qwen-code; then
  exit 0
fi
command -v npm >/dev/null || { echo "npm is needed to install the claude, codex, gemini, opencode, kilo and qwen clients" >&2; exit 1; }
mkdir -p "$dest"
echo "installing @anthropic-ai/claude-code@$CLAUDE_VERSION @openai/codex@$CODEX_VERSION" \
     "@google/gemini-cli@$GEMINI_VERSION opencode-ai@$OPENCODE_VERSION @kilocode/cli@$KILO_VERSION" \
     "@qwen-code/qwen-code@$QWEN_VERSION into $dest"
# opencode-ai's install script links its native binary (shipped in the opencode-linux-* package)
npm install --silent --no-audit --no-fund --prefix "$dest" \
  "@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION" \
  "@google/gemini-cli@$GEMINI_VERSION" "opencode-ai@$OPENCODE_VERSION" "@kilocode/cli@$KILO_VERSION" \
  "@qwen-code/qwen-code@$QWEN_VERSION" >/dev/null
"$dest/node_modules/.bin/claude" --version >/dev/null
"$dest/node_modules/.bin/codex" --version >/dev/null
"$dest/node_modules/.bin/gemini" --version >/dev/null
"$dest/node_modules/.bin/opencode" --version >/dev/null
# an optional dependency that is missing leaves @kilocode/cli without a binary, and npm says nothing
kilo_version=$("$dest/node_modules/.bin/kilo" --version 2>&1) || {
  echo "kilo $KILO_VERSION does not run: its binary package @kilocode/cli-linux-x64@$KILO_VERSION (or the one for" \
       "this platform) was not installed; check \`npm view @kilocode/cli-linux-x64@$KILO_VERSION\`: $kilo_version" >&2
  exit 1
}
if [ "${kilo_version##*$'\n'}" != "$KILO_VERSION" ]; then
  echo "kilo --version says ${kilo_version##*$'\n'}, not the pinned $KILO_VERSION: remove $dest and run this script again" >&2
  exit 1
fi
# @qwen-code/qwen-code declares node >= 22; measured: it runs on node 20 too
"$dest/node_modules/.bin/qwen" --version >/dev/null
