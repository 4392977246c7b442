#!/usr/bin/env bash
# Checks that vendor/regorus is regorus 0.14.1 as published on crates.io plus the patches of
# PATCHES.md: every file the library build needs is here, and every file that differs from the
# published one carries a `PATCH (reasonix, vendor/regorus/PATCHES.md #n)` marker.
# Usage: vendor/regorus/check.sh   (fetches the published crate through cargo; exits 1 on a mismatch)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/src"
printf '[package]\nname = "fetch-regorus"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nregorus = "=0.14.1"\n' > "$scratch/Cargo.toml"
echo 'fn main() {}' > "$scratch/src/main.rs"
(cd "$scratch" && cargo fetch -q)
published="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/regorus-0.14.1 | head -1)"
status=0
# Every source file of the published crate is here.
while IFS= read -r f; do
    if [ ! -f "$here/$f" ]; then
        echo "missing: vendor/regorus/$f (in the published crate)"
        status=1
    fi
done < <(cd "$published" && find src build.rs -type f | sort)
# Every file that differs is marked as a patch (Cargo.toml: the tables PATCHES.md names).
while IFS= read -r f; do
    [ "$f" = Cargo.toml ] && continue
    if ! cmp -s "$published/$f" "$here/$f" && ! grep -q 'PATCH (reasonix, vendor/regorus/PATCHES.md #' "$here/$f"; then
        echo "differs without a PATCH marker: vendor/regorus/$f"
        status=1
    fi
done < <(cd "$here" && find src build.rs -type f | sort)
[ "$status" = 0 ] && echo "ok vendor/regorus is regorus 0.14.1 plus the patches PATCHES.md lists"
exit "$status"
