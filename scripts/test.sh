#!/usr/bin/env bash
# Install what the tests need, then run the whole suite against a real Secret Service.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-deps.sh
set +e
bash scripts/with-keyring.sh .venv/bin/python -m pytest -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$rc"
