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
# The first run takes minutes and pip is quiet: say what is happening, and how long it took.
started=$(date +%s)
echo "kagent runtime: creating $venv with kagent's ADK runtime (first run only; about 2-3 minutes)..." >&2
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --disable-pip-version-check --quiet -r "$req"
echo "$want" > "$stamp"
echo "kagent runtime: $venv ready in $(( $(date +%s) - started )) s" >&2
