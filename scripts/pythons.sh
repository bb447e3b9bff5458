#!/usr/bin/env bash
# Every CPython >= 3.10 on this machine, one per minor version: Debian's /usr/bin/python3.X and
# pyenv's builds (the interpreters this machine's package sources and image provide).
set -euo pipefail
seen=" "
for py in /usr/bin/python3.1[0-9] "$(pyenv root 2>/dev/null || echo /root/.pyenv)"/versions/3.1[0-9]*/bin/python3; do
  [ -x "$py" ] || continue
  minor=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
  "$py" -c 'import venv, ensurepip' 2>/dev/null || continue   # Debian's python3.X needs python3.X-venv
  case "$seen" in *" $minor "*) continue ;; esac
  seen="$seen$minor "
  echo "$py"
done
