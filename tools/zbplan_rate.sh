# Sourced by the table scripts: $zbplan (the first argument, or build/zbplan), a temporary folder
# removed on exit, and rate ARGS... (the span bubble rate `zbplan plan ARGS` prints).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
zbplan="${1:-$here/build/zbplan}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Searches run whole (--time-limit 0): the tables are the same on any machine.
rate() { "$zbplan" plan --time-limit 0 -o "$tmp/s.json" "$@" | awk '$1 == "span" && $2 == "bubble" {print $4}'; }
