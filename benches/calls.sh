# Sourced by the whole-process scripts (oneshot.sh, instructions.sh, startup-order.sh), from
# the repository's root, so that their rows judge the same calls in the same workspace and their
# figures can be set side by side:
#   REASONIX   the binary (default: `cargo build --release`, then target/release/reasonix)
#   WS         a temporary workspace, removed on exit: src/deep/lib.rs (the file read_file
#              reads), ws/ (an empty workspace for `sandbox exec`), off.yaml (`sandbox.bash: off`)
#   BASH_CALL  a 100-byte bash call; READ_CALL a read_file call
#   YAML       --policy policies/default.yaml
#   REGO       the same and the five example Rego policies of issue 12 (claude-code-bash,
#              git-push-origin, network-allowlist, read-size-limit, workflows-ask)
if [ -z "${REASONIX:-}" ]; then
    cargo build -q --release
    REASONIX=$PWD/target/release/reasonix
fi
WS=$(mktemp -d)
trap 'rm -rf "$WS"' EXIT
mkdir -p "$WS/src/deep" "$WS/ws"
printf 'fn main() {}\n' >"$WS/src/deep/lib.rs"
printf 'version: 1\nsandbox:\n  bash: off\n' >"$WS/off.yaml"

BASH_CALL='{"id":"3","name":"bash","arguments":{"command":"git status --short && git diff --stat HEAD~1 | head -20 2>/dev/null; cargo test -q --lib >> logs.txt"}}'
READ_CALL='{"id":"1","name":"read_file","arguments":{"path":"src/deep/lib.rs"}}'
YAML=(--policy policies/default.yaml)
REGO=(--policy policies/default.yaml --policy policies/examples/claude-code-bash --policy policies/examples/git-push-origin --policy policies/examples/network-allowlist --policy policies/examples/read-size-limit --policy policies/examples/workflows-ask)
