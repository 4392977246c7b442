#!/usr/bin/env bash
# Checks that vendor/regorus is exactly regorus 0.14.1 as published on crates.io with the files of
# patches/ applied in order: the published crate's library files (src/, build.rs, Cargo.toml,
# LICENSE, README.md) are copied, each patch is applied with `patch -p1`, and the result must
# equal this folder byte for byte — no file missing, none extra, none changed outside a patch.
# Usage: vendor/regorus/check.sh   (fetches the published crate through cargo; exits 1 on a mismatch)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/fetch/src" "$scratch/applied"
printf '[package]\nname = "fetch-regorus"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nregorus = "=0.14.1"\n' > "$scratch/fetch/Cargo.toml"
echo 'fn main() {}' > "$scratch/fetch/src/main.rs"
(cd "$scratch/fetch" && cargo fetch -q)
published="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/regorus-0.14.1 | head -1)"
library=(src build.rs Cargo.toml LICENSE README.md)
for f in "${library[@]}"; do cp -r "$published/$f" "$scratch/applied/"; done
for p in "$here"/patches/*.patch; do
    if ! (cd "$scratch/applied" && patch -s -p1 --no-backup-if-mismatch < "$p"); then
        echo "does not apply to the published crate: vendor/regorus/patches/$(basename "$p")"
        exit 1
    fi
done
status=0
for f in "${library[@]}"; do
    if ! diff -r "$scratch/applied/$f" "$here/$f" > "$scratch/diff" 2>&1; then
        echo "vendor/regorus/$f differs from the published crate plus patches/:"
        head -40 "$scratch/diff"
        status=1
    fi
done
# Nothing else is kept besides the library, the patches and this check.
extra=$(cd "$here" && ls -A | grep -vxE 'src|build.rs|Cargo.toml|LICENSE|README.md|PATCHES.md|check.sh|patches' || true)
if [ -n "$extra" ]; then
    echo "vendor/regorus holds files the library build does not need: $extra"
    status=1
fi
[ "$status" = 0 ] && echo "ok vendor/regorus is regorus 0.14.1 plus $(ls "$here"/patches/*.patch | wc -l) patches (vendor/regorus/patches/)"
exit "$status"
