#!/usr/bin/env bash
# Install the pinned real clients into .cache/clients (used by the tests and the benchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."
CLAUDE_VERSION=2.1.332
CODEX_VERSION=0.171.0
GEMINI_VERSION=0.61.0
OPENCODE_VERSION=1.18.33
QWEN_VERSION=0.24.4
dest=.cache/clients
have() { [ -x "$dest/node_modules/.bin/$1" ] && grep -q "\"version\": \"$2\"" "$dest/node_modules/$3/package.json" 2>/dev/null; }
if have claude "$CLAUDE_VERSION" @anthropic-ai/claude-code && have codex "$CODEX_VERSION" @openai/codex \
   && have gemini "$GEMINI_VERSION" @google/gemini-cli && have opencode "$OPENCODE_VERSION" opencode-ai \
   && have qwen "$QWEN_VERSION" @qwen-code/qwen-code; then
  exit 0
fi
command -v npm >/dev/null || { echo "npm is needed to install the claude, codex, gemini, opencode and qwen clients" >&2; exit 1; }
mkdir -p "$dest"
echo "installing @anthropic-ai/claude-code@$CLAUDE_VERSION @openai/codex@$CODEX_VERSION" \
     "@google/gemini-cli@$GEMINI_VERSION opencode-ai@$OPENCODE_VERSION @qwen-code/qwen-code@$QWEN_VERSION into $dest"
# opencode-ai's install script links its native binary (shipped in the opencode-linux-* package)
npm install --silent --no-audit --no-fund --prefix "$dest" \
  "@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION" \
  "@google/gemini-cli@$GEMINI_VERSION" "opencode-ai@$OPENCODE_VERSION" \
  "@qwen-code/qwen-code@$QWEN_VERSION" >/dev/null
"$dest/node_modules/.bin/claude" --version >/dev/null
"$dest/node_modules/.bin/codex" --version >/dev/null
"$dest/node_modules/.bin/gemini" --version >/dev/null
"$dest/node_modules/.bin/opencode" --version >/dev/null
# @qwen-code/qwen-code declares node >= 22; measured: it runs on node 20 too
"$dest/node_modules/.bin/qwen" --version >/dev/null
