#!/usr/bin/env bash
# libmnemo exports its public API only (engine/include/mnemo/README.md): no symbol of the engine's
# internal namespaces or helpers may appear among its dynamic symbols. Usage: check_exports.sh LIB
set -euo pipefail
lib="$1"
symbols=$(nm -D --defined-only -C "$lib")
[ -n "$symbols" ] || { echo "check_exports: $lib exports nothing (not a shared library?)" >&2; exit 1; }
internal='mnemo::(detail|reference|shape|session_detail|tokenizer_detail|unicode)::|mnemo::(Sha256|sha256|to_hex|digest_matches_hex)\b'
# Here-strings, not pipes: grep -q stops reading early, which would fail a pipe under pipefail.
leaks=$(grep -E "$internal" <<<"$symbols" || true)
if [ -n "$leaks" ]; then
  echo "check_exports: $lib exports internal symbols (mark only public API with MNEMO_API):" >&2
  head -20 <<<"$leaks" >&2
  exit 1
fi
# And the public API is there: what the programs linking libmnemo call.
for wanted in 'mnemo::Session::open' 'mnemo::load_tokenizer' 'mnemo::op_info' 'mnemo::json::parse_file' 'typeinfo for mnemo::Error'; do
  grep -qF "$wanted" <<<"$symbols" || { echo "check_exports: $lib does not export $wanted" >&2; exit 1; }
done
echo "check_exports: $(grep -c 'mnemo::' <<<"$symbols") mnemo symbols exported, none internal"
