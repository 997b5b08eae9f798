#!/usr/bin/env bash
# Install what the tests need, type-check the package, then run the whole suite against a real Secret Service.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-deps.sh
# The type check first: seconds (its cache, .mypy_cache, is this checkout's own), where the tests take minutes.
if ! .venv/bin/mypy; then
  echo "mypy found type errors (listed above): fix them, the tests did not run" >&2
  exit 1
fi
set +e
bash scripts/with-keyring.sh .venv/bin/python -m pytest -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$rc"
