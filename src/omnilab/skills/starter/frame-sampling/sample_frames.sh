#!/usr/bin/env bash
# sample_frames.sh VIDEO OUTDIR [RATE=1] [START=0] [DURATION]: frames named by their time, tNNNN.NN.png
set -euo pipefail
video=$1; out=$2; rate=${3:-1}; start=${4:-0}; dur=${5:-}
mkdir -p "$out"
tmp=$(mktemp -d "$out/.tmp.XXXX")
args=(-hide_banner -loglevel error -ss "$start")
[ -n "$dur" ] && args+=(-t "$dur")
# The first frame at or after each multiple of 1/RATE (the fps filter would pick frames up to half
# a period late, and the names would lie about the time).
pick="select='isnan(prev_selected_t)+gte(t-prev_selected_t,1/$rate-0.001)'"
ffmpeg "${args[@]}" -i "$video" -vf "$pick" -fps_mode vfr -start_number 0 "$tmp/%06d.png"
n=0
for f in "$tmp"/*.png; do
  [ -e "$f" ] || break
  idx=$((10#$(basename "$f" .png)))
  t=$(python3 -c "print(f'{$start + $idx / $rate:07.2f}')")
  mv "$f" "$out/t$t.png"; n=$((n + 1))
done
rmdir "$tmp"
echo "$n frames in $out (rate $rate/s from $start s)"
