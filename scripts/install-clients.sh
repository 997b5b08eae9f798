#!/usr/bin/env bash
# Install the pinned real clients (the tests and the benchmarks use them) into .cache/clients, as the
# registry declares them: each client spec's `package` names its package manager, package and version
# (ccswitch_tui/tools/layers.py, Package). npm packages go into .cache/clients/node_modules, a PyPI
# package into a virtual environment of its own under .cache/clients/venvs/; .cache/clients/bin links
# every client's executable. No client is named here. What is installed at its pinned version is kept
# (the folder may be shared): only what is missing or at another version is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${CCS_PYTHON:-.venv/bin/python}          # a Python that imports ccswitch_tui (the registry)
[ -x "$PY" ] || PY=python3
CLIENT_PY=${CLIENT_PYTHON:-python3}          # the Python a PyPI client's virtual environment is made with
dest=.cache/clients
mkdir -p "$dest/bin"
rows=$("$PY" - <<'PYEOF'
from ccswitch_tui import tools

for spec in tools.load().clients():
    p = spec.package
    if p is not None:
        print("\t".join((p.manager, p.name, p.version, spec.program or spec.name, p.check, p.broken_hint)))
PYEOF
)
npm_missing=()
pypi_missing=()
while IFS=$'\t' read -r manager name version program check hint; do
  case "$manager" in
    npm)
      if ! { [ -x "$dest/node_modules/.bin/$program" ] \
             && grep -q "\"version\": \"$version\"" "$dest/node_modules/$name/package.json" 2>/dev/null; }; then
        npm_missing+=("$name@$version")
      fi ;;
    pypi)
      dist=$(echo "$name" | tr '-' '_')
      if ! { [ -x "$dest/venvs/$name/bin/$program" ] \
             && compgen -G "$dest/venvs/$name/lib/python*/site-packages/$dist-$version.dist-info" >/dev/null; }; then
        pypi_missing+=("$name==$version")
      fi ;;
    *) echo "unknown package manager $manager for $name" >&2; exit 1 ;;
  esac
done <<< "$rows"
if [ ${#npm_missing[@]} -gt 0 ]; then
  command -v npm >/dev/null || { echo "npm is needed to install ${npm_missing[*]}" >&2; exit 1; }
  echo "installing ${npm_missing[*]} into $dest"
  npm install --silent --no-audit --no-fund --prefix "$dest" "${npm_missing[@]}" >/dev/null
fi
for spec in ${pypi_missing[@]+"${pypi_missing[@]}"}; do
  name=${spec%%==*}
  echo "installing $spec into $dest/venvs/$name"
  [ -x "$dest/venvs/$name/bin/pip" ] || "$CLIENT_PY" -m venv "$dest/venvs/$name"
  "$dest/venvs/$name/bin/pip" install -q --disable-pip-version-check "$spec" 2>&1 | grep -v '^WARNING: Location' || true
done
# bin/: one link per client; then each must start and say its pinned version
while IFS=$'\t' read -r manager name version program check hint; do
  if [ "$manager" = npm ]; then target="../node_modules/.bin/$program"; else target="../venvs/$name/bin/$program"; fi
  [ "$(readlink "$dest/bin/$program" 2>/dev/null)" = "$target" ] || ln -sfn "$target" "$dest/bin/$program"
  # shellcheck disable=SC2086  # check is the spec's argument list
  out=$("$dest/bin/$program" $check 2>&1 </dev/null) || {
    echo "$program $version does not run${hint:+: $hint}: $out" >&2
    exit 1
  }
  case "$out" in
    *"$version"*) ;;
    *) echo "$program $check says ${out##*$'\n'}, not the pinned $version: remove $dest/node_modules/$name" \
            "(or $dest/venvs/$name) and run this script again" >&2
       exit 1 ;;
  esac
done <<< "$rows"
