#!/usr/bin/env bash
# mnemo-chat used as a person uses it, in a real X window (Xvfb at 1366x768, keys typed with
# xdotool): three turns with the bundled default model, a regeneration, a switch to the Vulkan
# device, a document added from the window (Ctrl+Shift+A, a path, Enter) and a question about it.
# Each step is checked in what the app saved (its conversation file, its memory folder), not on the
# screen; a screenshot of the whole screen is written after each step to OUT_DIR for a person to
# look at (the issue's notes describe them).
#   tests/gui/xvfb_session.sh BIN_DIR OUT_DIR
# Exit 0: every step did what it should; 1: a step failed (the app's log is in OUT_DIR); 77:
# skipped, a tool is missing (scripts/install-deps.sh --tests installs xvfb xdotool x11-apps
# imagemagick). The app runs with its own empty settings and data folders under a temporary folder.
set -uo pipefail
bin=${1:?usage: xvfb_session.sh BIN_DIR OUT_DIR}
out=${2:?usage: xvfb_session.sh BIN_DIR OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)

# ImageMagick's own convert: a machine may have another program of that name first on PATH.
convert=/usr/bin/convert
[ -x "$convert" ] || convert=$(command -v convert || true)
for tool in Xvfb xdotool xwd python3; do
  command -v "$tool" >/dev/null || { echo "xvfb_session: skipped: $tool is not installed (scripts/install-deps.sh --tests)"; exit 77; }
done
[ -n "$convert" ] && "$convert" -version 2>/dev/null | grep -q ImageMagick ||
  { echo "xvfb_session: skipped: ImageMagick's convert is not installed (scripts/install-deps.sh --tests)"; exit 77; }
[ -x "$bin/mnemo-chat" ] || { echo "xvfb_session: $bin/mnemo-chat is not built"; exit 1; }

mkdir -p "$out"
rm -f "$out"/*.png
tmp=$(mktemp -d)
app_pid="" xvfb_pid=""
cleanup() {
  [ -n "$app_pid" ] && kill "$app_pid" 2>/dev/null
  [ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "xvfb_session: FAILED: $*"
  [ -n "${DISPLAY:-}" ] && xwd -root -silent 2>/dev/null | "$convert" xwd:- "$out/failed.png" 2>/dev/null && echo "the screen: $out/failed.png"
  echo "--- the app's log (last lines):"; tail -20 "$out/mnemo-chat.log"; exit 1
}
t0=$SECONDS
step() { echo "[xvfb_session +$((SECONDS - t0))s] $*"; }

# The app's own folders: nothing of the user's is read or written.
export HOME=$tmp/home XDG_DATA_HOME=$tmp/data XDG_CONFIG_HOME=$tmp/config XDG_CACHE_HOME=$tmp/cache XDG_RUNTIME_DIR=$tmp/run
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
conversations=$XDG_DATA_HOME/Mnemo/mnemo-chat/conversations
settings=$XDG_CONFIG_HOME/Mnemo/mnemo-chat/settings.ini

# A display of its own: Xvfb picks a free number and writes it to fd 3.
Xvfb -displayfd 3 -screen 0 1366x768x24 -nolisten tcp 3>"$tmp/display" 2>"$out/xvfb.log" &
xvfb_pid=$!
for _ in $(seq 50); do [ -s "$tmp/display" ] && break; sleep 0.1; done
[ -s "$tmp/display" ] || fail "Xvfb did not start (see $out/xvfb.log)"
export DISPLAY=:$(head -1 "$tmp/display")
unset WAYLAND_DISPLAY
export QT_QPA_PLATFORM=xcb QT_QUICK_BACKEND=software

shot() { xwd -root -silent | "$convert" xwd:- "$out/$1.png" && step "screenshot $1.png"; }
# What the open conversation holds, from its saved file (the newest), as one fact per call.
fact() { python3 "$here/xvfb_session_facts.py" "$conversations" "$@"; }
# Waits up to $2 seconds (default 60) for `fact $1` to print "yes".
wait_for() {
  local what=$1 limit=${2:-60} i
  for ((i = 0; i < limit * 5; i++)); do
    [ "$(fact "$what" 2>/dev/null)" = yes ] && return 0
    kill -0 "$app_pid" 2>/dev/null || fail "mnemo-chat exited while waiting for: $what"
    sleep 0.2
  done
  fail "no '$what' within ${limit} s"
}
ask() {  # types a prompt and Enter, then waits for its answer
  local n=$1 prompt=$2
  xdotool type --delay 15 "$prompt"
  xdotool key Return
  wait_for "answers=$n" 90
}

step "mnemo-chat on $DISPLAY"
"$bin/mnemo-chat" >"$out/mnemo-chat.log" 2>&1 &
app_pid=$!
wid=$(timeout 60 xdotool search --sync --onlyvisible --name '^Mnemo' | head -1)
[ -n "$wid" ] || fail "no mnemo-chat window within 60 s"
xdotool windowfocus --sync "$wid" 2>/dev/null || true
# The model is loaded once it is the first of the recent models in the settings file.
for _ in $(seq 300); do grep -q '^recent_models=.*default-model' "$settings" 2>/dev/null && break; sleep 0.2; done
grep -q '^recent_models=.*default-model' "$settings" 2>/dev/null || fail "the default model did not load within 60 s"
sleep 0.5
shot 01-start

step "three turns"
ask 1 "Where was Tour Hujert born?"
shot 02-first-answer
ask 2 "What does Tour Hujert do?"
ask 3 "Where was Tour Hujert born?"
shot 03-three-turns
fact summary

step "regenerate (Ctrl+R): a new seed, the first answer kept as version 1/2"
xdotool key ctrl+r
wait_for "versions=2" 60
fact summary
shot 04-regenerated

# Ctrl+D opens the device picker; its rows are Fastest, then each backend's devices (or one
# disabled row saying it has none) in `mnemo devices` order, then the server entry. Down moves
# from CPU 0, the row after Fastest.
vulkan_row=$("$bin/mnemo" devices 2>/dev/null | awk '
  /^[a-z]/ { if (backend != "" && !any) row++; backend = $1; any = 0; next }
  /^ *\[[0-9]+\]/ { row++; any = 1; if (backend == "vulkan" && !found) { found = row } }
  END { print found + 0 }')
if [ "$vulkan_row" -gt 1 ]; then
  step "switch to the Vulkan device (Ctrl+D, Down x$((vulkan_row - 1)), Enter), then ask"
  xdotool key ctrl+d
  sleep 0.5
  for ((i = 1; i < vulkan_row; i++)); do xdotool key Down; sleep 0.1; done
  xdotool key Return
  sleep 3
  ask 4 "What does Tour Hujert do?"
  [ "$(fact last-device)" = vulkan ] || fail "the answer after the switch ran on '$(fact last-device)', not vulkan"
  shot 05-on-vulkan
  answers=4
else
  step "skipped the device switch: this machine has no Vulkan device"
  answers=3
fi

step "add a document (Ctrl+Shift+A, its path, Enter) and ask about it"
mkdir -p "$tmp/docs"
printf '# Zorblat Quenn\n\nZorblat Quenn was born in Plimvar.\n\nZorblat Quenn works as a glassblower in Plimvar.\n' >"$tmp/docs/zorblat.txt"
xdotool key ctrl+shift+a
sleep 0.5
xdotool type --delay 10 "$tmp/docs/zorblat.txt"
xdotool key Return
memories=$XDG_DATA_HOME/Mnemo/mnemo-chat/memories
for _ in $(seq 300); do grep -qs zorblat "$memories"/*/references.jsonl && break; sleep 0.2; done
grep -qs zorblat "$memories"/*/references.jsonl || fail "the document did not reach a memory folder under $memories within 60 s"
sleep 1
shot 06-document-added
xdotool key Escape
sleep 2  # the model reloads with its memory folder
ask $((answers + 1)) "Where was Zorblat Quenn born?"
[ "$(fact last-reads zorblat.txt)" = yes ] || fail "the answer about the document did not read its memories: $(fact summary)"
fact summary
shot 07-answer-from-the-document

step "quit"
kill -TERM "$app_pid"
for _ in $(seq 50); do kill -0 "$app_pid" 2>/dev/null || break; sleep 0.2; done
kill -0 "$app_pid" 2>/dev/null && fail "mnemo-chat did not quit within 10 s of SIGTERM"
app_pid=""
step "passed; screenshots in $out"
