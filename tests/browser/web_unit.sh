#!/usr/bin/env bash
# web_unit.sh: the web UI's unit tests (web/test/*.test.mjs) under node's test runner.
#
#   web_unit.sh WEB_DIR
set -euo pipefail
web=$(cd "${1:?usage: web_unit.sh WEB_DIR}" && pwd)
command -v node >/dev/null || { echo "FAIL: no node (scripts/deps.sh installs it)"; exit 1; }
shopt -s nullglob
tests=("$web"/test/*.test.mjs "$web"/test/*.test.js)
if [ ${#tests[@]} -eq 0 ]; then
	echo "FAIL: no test files in $web/test"
	exit 1
fi
cd "$web"
exec node --test --test-reporter=spec "${tests[@]}"
