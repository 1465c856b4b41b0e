#!/usr/bin/env bash
# make demo: record the simulated training loop (sim/train.py on the
# simulated GPU in build/sim) with gpubpf and say where the trace is.
set -euo pipefail
cd "$(dirname "$0")/.."

# recording needs root: as another user, through sudo (the trace is then
# the invoking user's all the same)
as_root=()
if [[ $(id -u) -ne 0 ]]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "demo: recording needs root: run make demo as root (or install sudo)" >&2
		exit 2
	fi
	as_root=(sudo env LD_LIBRARY_PATH="$PWD/build/sim")
fi
out=build/demo
mkdir -p "$out"
trace="$out/gpubpf-demo.json"
echo "demo: recording a simulated training job (sim/train.py on the simulated GPU)"
LD_LIBRARY_PATH="$PWD/build/sim" "${as_root[@]}" build/gpubpf record -o "$trace" -- \
	python3 sim/train.py --steps 30 --sync-every 5
cat <<MSG

demo: the timeline is $PWD/$trace
      open https://ui.perfetto.dev, choose "Open trace file" and pick it
      (or load it in chrome://tracing).  Each host thread shows its CUDA
      driver calls (click one for its arguments: kernel, grid, block,
      stream, bytes, return code, and the Python stack that made it) under
      slices of the Python functions they were made from (Model.forward,
      SGD.step...); the "GPU 0 / stream N" tracks show when each kernel,
      copy and memset ran on the simulated GPU, with an arrow from the call
      that launched it.  The text above is 'gpubpf report' on that trace.
MSG
