#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run the attack suite with sandboxd running as an ordinary user (rootless: user
# namespaces only, no cgroups), as CONTRACT/issue 3 asks. As root we create a system
# user for it and copy the build where that user can read it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1
USER_NAME=sandboxd-test
STAGE=$(mktemp -d /tmp/sandboxd-rootless.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/build" "$STAGE/tests"
cp build/sandboxd build/sandboxd-server build/libsbxcell.so "$STAGE/build/"
cp -r runtime "$STAGE/runtime"
cp -r tests/attacks "$STAGE/tests/attacks"
# The console's attacks drive Chromium through tests/node (not staged): they run in the root pass.
rm -f "$STAGE/tests/attacks/test_console_attacks.py"
# Tests that need root to set up the attack (giving a file to another user) run in the root pass.
DESELECT=(--deselect tests/attacks/test_discovery_cache.py::test_a_file_of_another_user
          --deselect tests/attacks/test_discovery_cache.py::test_a_state_directory_of_another_user)
cp tests/harness.py tests/origins.py tests/pg.py "$STAGE/tests/"
# The fake Core Framework of the end-to-end suite, which an attack on warm reuse uses.
mkdir -p "$STAGE/tests/e2e" && cp tests/e2e/framework.py "$STAGE/tests/e2e/"
find "$STAGE" -name __pycache__ -prune -exec rm -rf {} +
chmod -R a+rX "$STAGE"
touch "$OUT"

if [[ $(id -u) -eq 0 ]]; then
  if ! id "$USER_NAME" >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
      "$USER_NAME" || { echo "rootless: cannot create user $USER_NAME" >&2; exit 1; }
  fi
  chown "$USER_NAME" "$OUT"
  # The setuid-root helper of the setuid attack can only be made by root.
  mkdir -p "$STAGE/suid"
  printf '#include <stdio.h>\n#include <unistd.h>\nint main(void){printf("%%d %%d\\n",(int)getuid(),(int)geteuid());return 0;}\n' >"$STAGE/suid/whoami.c"
  gcc -O1 -o "$STAGE/suid/whoami" "$STAGE/suid/whoami.c" && chmod 4755 "$STAGE/suid/whoami"
  chmod 755 "$STAGE/suid"
  cd "$STAGE"
  exec setpriv --reuid="$USER_NAME" --regid="$USER_NAME" --clear-groups --reset-env \
    env SANDBOXD_BIN="$STAGE/build/sandboxd" SANDBOXD_ROOTLESS=1 HOME=/tmp \
    SANDBOXD_SUID_DIR="$STAGE/suid" \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/attacks "${DESELECT[@]}" --junitxml="$OUT"
fi
cd "$STAGE"
SANDBOXD_BIN="$STAGE/build/sandboxd" SANDBOXD_ROOTLESS=1 \
  exec /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/attacks "${DESELECT[@]}" --junitxml="$OUT"
