#!/usr/bin/env bash
# Installs what tandem-monitor needs on a fresh Debian/Ubuntu machine. Idempotent: a second run only checks.
#   - system packages: libclang-dev (nokhwa's V4L2 bindings), mosquitto (broker integration tests),
#     openssl (the command line that makes the TLS test certificates),
#     dreamchess-data (the simulator's piece meshes)
#   - the ONNX Runtime shared library, taken from the `onnxruntime` wheel on PyPI, into .cache/onnxruntime/
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ORT_VERSION="${TANDEM_ORT_VERSION:-1.31.1}"

need=()
for pkg in libclang-dev mosquitto openssl dreamchess-data pkg-config; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "bootstrap: installing ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # The mosquitto package starts a system broker on 1883; the tests start their own on free ports.
  if command -v systemctl >/dev/null 2>&1; then $sudo systemctl disable --now mosquitto >/dev/null 2>&1 || true; fi
fi

cache="$here/.cache/onnxruntime"
if ! ls "$cache"/libonnxruntime.so.* >/dev/null 2>&1; then
  echo "bootstrap: fetching ONNX Runtime $ORT_VERSION from the PyPI onnxruntime wheel" >&2
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "onnxruntime==$ORT_VERSION" >&2
  mkdir -p "$cache"
  python3 - "$tmp" "$cache" <<'PY'
import glob, os, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(src, "onnxruntime-*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith("onnxruntime/capi/libonnxruntime.so")]
    if not names:
        sys.exit("bootstrap: the wheel holds no onnxruntime/capi/libonnxruntime.so.*")
    for n in names:
        with z.open(n) as f, open(os.path.join(dst, os.path.basename(n)), "wb") as out:
            out.write(f.read())
PY
fi
ls "$cache"/libonnxruntime.so.* >/dev/null
