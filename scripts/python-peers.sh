#!/usr/bin/env bash
# Creates .venv-peers with the Python test peers' pinned packages (the official a2a-sdk), once:
# a stamp of the requirements' hash makes a second run a no-op. The integration tests call this
# too, so `npm test` works on a fresh machine without a separate step.
set -euo pipefail
cd "$(dirname "$0")/.."
req=test/peers/python/requirements.txt
venv=.venv-peers
stamp="$venv/.requirements.sha256"
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
  exit 0
fi
echo "python peers: creating $venv with the pinned a2a-sdk (first run only; about 30 s)..." >&2
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --disable-pip-version-check --quiet -r "$req"
echo "$want" > "$stamp"
