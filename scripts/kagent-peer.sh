#!/usr/bin/env bash
# Creates .venv-kagent with kagent's ADK runtime, pinned in test/peers/kagent/requirements.txt,
# once: a stamp of the requirements' hash makes a second run a no-op. The kagent runtime test
# calls this itself, so `npm run test:integration` works on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
req=test/peers/kagent/requirements.txt
venv=.venv-kagent
stamp="$venv/.requirements.sha256"
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/kagent-adk" ]; then
  exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --disable-pip-version-check --quiet -r "$req"
echo "$want" > "$stamp"
