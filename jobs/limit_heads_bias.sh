#!/usr/bin/env bash
# The bias of the limit's step heads (docs/results.md, 'Studies in law over
# ranks'): the extrapolated Gram means of the depth study's limit at K heads
# a step (the default pair, halves) against 16 heads a step drawn
# independently, PATHS paths each, and per probe sequence the relative gap
# |G_K - G_16| / |G_16|, raw and corrected for both files' sampling, with
# upper bounds (a reading of the two files' gram_mean and gram_stderr).
#
#   jobs/limit_heads_bias.sh OUT [PATHS (1000000)] [K (2)]
set -euo pipefail
top="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$1"
paths="${2:-1000000}"
K="${3:-2}"
MFT="${MFT:-$top/build/mft}"
[ -x "$MFT" ] || bash "$top/jobs/setup.sh"
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mkdir -p "$out"
common=(limit --config "$top/input/study_diffusive_depth.cfg" --data.M 2 --data.family discrete
        --limit.paths "$paths")
run() { # name, options
  local name="$1"
  shift
  /usr/bin/time -f "%e s, %M kB" -o "$out/$name.time" mpiexec --oversubscribe -n "$(nproc)" "$MFT" "${common[@]}" "$@" \
    --output.file "$out/$name.h5" >"$out/$name.out" 2>&1
}
run "K$K" --init.seed 5000777 --limit.step_heads "$K"
run K16 --init.seed 777 --limit.step_heads 16 --limit.coupling independent
{
  echo "# K = $K (halves, seed 5000777) against K = 16 (independent, seed 777), $paths paths each, $(nproc) ranks,"
  echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(date -u +%F), $(git -C "$top" log -1 --format=%h)"
  echo "# wall and peak memory: K = $K $(cat "$out/K$K.time"); K = 16 $(cat "$out/K16.time")"
  /usr/bin/python3 - "$out/K$K.h5" "$out/K16.h5" <<'EOF'
import sys, h5py, numpy as np
def read(path):
    with h5py.File(path, "r") as f:
        for key in ("/output/gram_mean", "/limit/gram_mean", "gram_mean"):
            if key in f:
                base = key[: -len("gram_mean")]
                return np.array(f[key]), np.array(f[base + "gram_stderr"])
    sys.exit("no gram_mean in " + path)
(a, sa), (b, sb) = read(sys.argv[1]), read(sys.argv[2])
a, sa, b, sb = (x.reshape(-1, x.shape[-2], x.shape[-1]) for x in (a, sa, b, sb))
print("# sequence: raw relative gap |D|, its noise (both sides' sampling), the gap corrected for it with its 95%")
print("# upper bound (the entries' errors taken as independent), and the bound |D| + 2 noise that needs no such")
print("# assumption (the bias is at most |D| plus the sampling's own part); all relative to |G_16|")
for m in range(a.shape[0]):
    iu = np.triu_indices(a.shape[1])
    w = np.where(iu[0] == iu[1], 1.0, 2.0)  # each off-diagonal entry twice in the Frobenius norm
    d, v = (a[m] - b[m])[iu], (sa[m] ** 2 + sb[m] ** 2)[iu]
    norm2 = np.sum(w * b[m][iu] ** 2)
    corrected = np.sum(w * (d ** 2 - v))
    sd = np.sqrt(np.sum(w ** 2 * (4 * d ** 2 * v + 2 * v ** 2)))
    upper = np.sqrt(max(corrected + 1.959964 * sd, 0) / norm2)
    print(f"{m} raw {np.sqrt(np.sum(w * d ** 2) / norm2):.4f} noise {np.sqrt(np.sum(w * v) / norm2):.4f} "
          f"corrected {np.sign(corrected) * np.sqrt(abs(corrected) / norm2):+.4f} upper95 {upper:.4f} "
          f"bound {np.sqrt(np.sum(w * d ** 2) / norm2) + 2 * np.sqrt(np.sum(w * v) / norm2):.4f}")
EOF
} | tee "$out/limit_heads_bias.log"
