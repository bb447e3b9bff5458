#!/usr/bin/env bash
# Build a stripped Ray for the lent H200 (issue 19: the six configs through a one-GPU local Ray
# cluster), small enough for a call of its own onto the still-warm machine that already holds the
# vLLM payload in /tmp/site (41 MiB payload + Ray do not fit one call's 64 MiB together).
#
# Kept: what `ray start --head` and a task worker load (ray's Python core, _raylet.so, the raylet
# and gcs_server binaries, the dashboard agent's Python, autoscaler and runtime-env code). Dropped:
# the Java jars, the libraries (rllib, data, train, tune, serve, llm), the dashboard's web client,
# tests, caches; binaries stripped of their symbols. Ray's one dependency missing on the image
# (jsonschema, with referencing, jsonschema-specifications and rpds-py) travels with it.
#
# usage (here, with pip and network): bash scripts/device/build_ray_payload.sh [OUT.tar.xz]
# default OUT: .devx/ray.tar.xz (git-ignored). On the device: tar -xJf .devx/ray.tar.xz -C /tmp/ray-site
# Measured here on 2026-12-01 on the local Python 3.11 install of ray 2.60.0 (same layout), with
# the same folders dropped but the binaries not stripped: a 137 MB tree, 20.2 MB as tar.xz -9
# (8 minutes of xz on this loaded 2-core machine). This script itself (cp312 wheel) was not run.
set -eu
OUT=${1:-.devx/ray.tar.xz}
mkdir -p "$(dirname "$OUT")"; dest=$(cd "$(dirname "$OUT")" && pwd)/$(basename "$OUT")
RAY_VERSION=${RAY_VERSION:-2.60.0}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${plat[@]}" -d "$W/whl" "ray==$RAY_VERSION" jsonschema jsonschema-specifications referencing rpds-py
mkdir -p "$W/site"
for whl in "$W"/whl/*.whl; do python3 -m zipfile -e "$whl" "$W/site"; done
cd "$W/site/ray"
rm -rf jars rllib data train tune serve llm dashboard/client
find . -name tests -type d -prune -exec rm -rf {} +
find . -name __pycache__ -type d -prune -exec rm -rf {} +
chmod +x core/src/ray/raylet/raylet core/src/ray/gcs/gcs_server 2>/dev/null || true
for f in _raylet.so core/src/ray/raylet/raylet core/src/ray/gcs/gcs_server; do
  [ -f "$f" ] && strip --strip-unneeded "$f"
done
cd "$W"
du -sh site
tar -C "$W" -cf - site | xz -9 -T0 > "$dest"
ls -la "$dest"
