#!/usr/bin/env bash
# extract_audio.sh MEDIA OUT.wav [START=0] [DURATION]: 16 kHz mono 16-bit PCM, what ASR models expect
set -euo pipefail
src=$1; out=$2; start=${3:-0}; dur=${4:-}
args=(-hide_banner -loglevel error -y -ss "$start")
[ -n "$dur" ] && args+=(-t "$dur")
ffmpeg "${args[@]}" -i "$src" -vn -ac 1 -ar 16000 -c:a pcm_s16le "$out"
python3 - "$out" <<'PY'
import sys, wave
with wave.open(sys.argv[1]) as w:
    print(f"{sys.argv[1]}: {w.getnframes() / w.getframerate():.2f} s, {w.getframerate()} Hz, {w.getnchannels()} channel(s)")
PY
