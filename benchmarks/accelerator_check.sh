#!/usr/bin/env bash
# Issue 15's accelerator check, for a machine with a CUDA GPU (under 10 minutes on one recent GPU):
#   1. the engine's lossless and in-distribution tests, fixed gamma and gamma="auto", on CUDA in fp32 and bf16
#      (tests/test_gamma_auto.py's `_on_device` tests with TUTORIAL_LIB_TEST_DEVICE=cuda; bf16 may differ from
#      one-token decoding only where the verifier's two best tokens nearly tie);
#   2. benchmarks/engine_speed.py on the Qwen pair in bf16 (calibration, fixed gamma, gamma="auto",
#      transformers' greedy and assisted generation), 4 prompts x 2 rounds;
#   3. notebook 09 at its defaults (SmolLM2 pair, on the GPU);
#   4. the batched engine's exactness tests on CUDA and a verifier spread over two devices by a
#      device_map (GPU 0 and GPU 1, or GPU 0 and the CPU: tests/test_on_device.py), then the T5 smoke sweep
#      as 2 processes under `accelerate launch` on the GPUs (one each, or one shared), row for row equal to
#      the 1-process sweep, and a process killed mid-sweep losing no finished row (tests/test_sweep_processes.py).
# Results go to data/benchmarks/ with the device in their names; a summary to accelerator_check_<device>.md.
#
#   bash benchmarks/accelerator_check.sh          (or: make accelerator-check)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=data/benchmarks
mkdir -p "$OUT" build/notebooks

if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "no CUDA device visible to torch: this check is for a machine with a GPU" >&2
    exit 2
fi
DEVICE_NAME=$("$PY" -c "import torch; print(torch.cuda.get_device_name(0))")
SLUG=$(echo "$DEVICE_NAME" | tr -c 'A-Za-z0-9\n' '_' | tr -s '_' | sed 's/_$//')
SUMMARY="$OUT/accelerator_check_${SLUG}.md"
START=$(date +%s)
{
    echo "# Accelerator check on ${DEVICE_NAME}"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), torch $("$PY" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')"
    echo
    echo "| step | result | seconds |"
    echo "|---|---|---|"
} > "$SUMMARY"
FAILED=0

step() {  # step NAME TIMEOUT COMMAND...: run, time, and record one step
    local name=$1 limit=$2; shift 2
    local t0=$(date +%s) status
    echo "== ${name}" >&2
    timeout "$limit" "$@"
    status=$?
    local result=PASS
    [ $status -eq 0 ] || { result="FAIL (exit ${status})"; FAILED=1; }
    echo "| ${name} | ${result} | $(( $(date +%s) - t0 )) |" >> "$SUMMARY"
}

for dtype in float32 bfloat16; do
    step "engine tests on cuda, ${dtype}" 150 env TUTORIAL_LIB_TEST_DEVICE=cuda TUTORIAL_LIB_TEST_DTYPE=$dtype \
        "$PY" -m pytest -q -p no:cacheprovider tests/test_gamma_auto.py -k on_device \
        --junitxml="$OUT/accelerator_tests_${dtype}_${SLUG}.xml"
done

# The Qwen pair comes from registry packages (make models-qwen); without them, say so and run the SmolLM2 pair.
if "$PY" -c "import tutorial_lib.models.files as m; m.offline_model_dir('qwen2.5-coder-0.5b', progress=False); m.offline_model_dir('qwen2.5-coder-1.5b', progress=False)" 2>/dev/null \
   || timeout 240 make models-qwen >/dev/null 2>&1; then
    step "benchmark, Qwen pair, bf16" 300 "$PY" benchmarks/engine_speed.py --device cuda --dtypes bfloat16 \
        --rounds 2 --max-k 12 --gammas 1,3,5,7 --output "$OUT/engine_speed_cuda_${SLUG}"
else
    echo "| Qwen pair | not installed (make models-qwen failed): SmolLM2 benchmark instead | |" >> "$SUMMARY"
    step "benchmark, SmolLM2 (quick), bf16" 300 "$PY" benchmarks/engine_speed.py --quick --device cuda \
        --dtypes bfloat16 --rounds 2 --output "$OUT/engine_speed_quick_cuda_${SLUG}"
fi

step "batched engine and a spread verifier on cuda" 150 env TUTORIAL_LIB_TEST_DEVICE=cuda \
    "$PY" -m pytest -q -p no:cacheprovider tests/test_on_device.py --junitxml="$OUT/accelerator_on_device_${SLUG}.xml"

step "sweep over 2 processes on $("$PY" -c "import torch; print(torch.cuda.device_count())") GPU(s)" 300 env TUTORIAL_LIB_TEST_DEVICE=cuda \
    PATH="$(dirname "$PY"):$PATH" "$PY" -m pytest -q -p no:cacheprovider tests/test_sweep_processes.py \
    --junitxml="$OUT/accelerator_processes_${SLUG}.xml"

step "notebook 09 at its defaults" 240 "$PY" -m papermill --kernel tutorial-lib --cwd notebooks \
    notebooks/09_speed_on_your_hardware.ipynb "build/notebooks/09_speed_on_your_hardware_${SLUG}.ipynb" \
    -p output_dir "$(pwd)/$OUT/notebook09_${SLUG}"

{
    echo
    echo "Total $(( $(date +%s) - START )) s. Benchmark table: $OUT/engine_speed_cuda_${SLUG}.md;"
    echo "notebook 09's numbers: $OUT/notebook09_${SLUG}/09_speed_on_your_hardware.metrics.json."
} >> "$SUMMARY"
cat "$SUMMARY"
exit $FAILED
