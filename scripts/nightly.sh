#!/usr/bin/env bash
# The nightly GPU job, the same on a CI runner (.github/workflows/nightly-gpu.yml) and by hand on any GPU box:
#
#   scripts/nightly.sh LABEL [PREDICTIONS...] [-- EXTRA PYTEST ARGS...]
#   scripts/nightly.sh h100                          # every prediction file in predictions/ planned on an H100
#   scripts/nightly.sh a100 predictions/day3.yaml -- --reanchor -k kv
#   scripts/nightly.sh --dry-run h100                # print the exact commands, run nothing
#
# LABEL is a `--gpu` family (a100, h100, h200, l40s, ... `roofline hardware` lists them) or `cpu` (the CPU build
# of vLLM: a rehearsal of the job on any machine). A PREDICTIONS folder (default: predictions/) contributes the
# prediction files in it, and below it, whose `hardware:` is a variant of LABEL's family (an a100 runner does not
# run the H100 files); a file named on the command line is always run.
#
# It runs one pytest session: `--gpu LABEL` with the HTML report, the scorecard, the results folder and the
# run stored in the history under LABEL, then renders the history's trend page, also when pytest failed.
# Environment knobs:
#   ROOFLINE_HISTORY     the history store: a folder (default roofline-history), file://..., sqlite:///x.db,
#                        postgresql+psycopg://user@host:port/db
#   ROOFLINE_OUT         where the report, scorecard, results and trend page go (default roofline-nightly/LABEL)
#   ROOFLINE_DRIFT_FAIL  1: a prediction whose measured value drifted from the baseline fails (--roofline-drift-fail)
#   ROOFLINE_DRIFT_MIN_COMPARED  the least share compared under ROOFLINE_DRIFT_FAIL=1 (--roofline-drift-min-compared;
#                        0 lets a setup's first night, a new GPU label or a vLLM upgrade, pass, said)
#   ROOFLINE_DRIFT       the drift threshold (--roofline-drift, e.g. 5%; the plugin's default when unset)
#   ROOFLINE_PYTHON      the interpreter with pytest-roofline and vLLM (default .venv/bin/python, else python3)
# Exit code: pytest's. 0 only when every selected prediction passed (or xfailed as declared); 1 failures or
# drift, 2 interrupted, 3 internal error, 4 usage error, 5 nothing collected: every non-zero code fails the job,
# 5 included (a night that ran no prediction is a broken night, not a green one). The script itself exits 4 for
# a bad command line or label, 5 when no prediction file matches LABEL, and 6 when this machine has no GPU or no
# vLLM (--dry-run checks neither). Relative ROOFLINE_OUT and ROOFLINE_HISTORY folders are under the repository root.
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/.."  # the repository root: pytest's rootdir, so history keys name files as predictions/x.yaml
root=$PWD

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
  exit 0
}

dry_run=0
label=""
paths=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    -h|--help) usage ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "nightly.sh: unknown option $1 (pytest options go after --)" >&2; exit 4 ;;
    *) if [ -z "$label" ]; then label=$1; else paths+=("$1"); fi ;;
  esac
  shift
done
[ -n "$label" ] || { echo "nightly.sh: which GPU? e.g. scripts/nightly.sh h100 (see --help)" >&2; exit 4; }
[ ${#paths[@]} -gt 0 ] || paths=(predictions/)
if [ "$caller" != "$root" ]; then  # a relative path means one from where the script was called
  for i in "${!paths[@]}"; do
    case "${paths[$i]}" in /*) ;; *) [ ! -e "$caller/${paths[$i]}" ] || paths[i]="$caller/${paths[$i]}" ;; esac
  done
fi

if [ -n "${ROOFLINE_PYTHON:-}" ]; then py=$ROOFLINE_PYTHON
elif [ -x .venv/bin/python ]; then py=.venv/bin/python
else py=python3
fi
"$py" -c "import pytest_roofline" 2>/dev/null || {
  echo "nightly.sh: $py cannot import pytest_roofline; install it first (README, 'Installing on a GPU box')" >&2
  exit 6
}

# The label is checked by the plugin's own --gpu parser (pytest_roofline.pytest_plugin.plugin.parse_gpu), and the
# folders are expanded to the prediction files planned on that label's family.
files=()
selected=$("$py" - "$label" "${paths[@]}" <<'PY'
import sys
from pathlib import Path

from pytest_roofline.errors import RooflineError
from pytest_roofline.format.spec import load_spec
from pytest_roofline.model import hardware
from pytest_roofline.pytest_plugin.collect import looks_like_prediction_file
from pytest_roofline.pytest_plugin.plugin import parse_gpu

label, args = sys.argv[1], sys.argv[2:]
try:
    parse_gpu(label)
except Exception as exc:  # argparse.ArgumentTypeError: the same message pytest --gpu would give
    print(f"nightly.sh: bad label {label!r}: {exc}", file=sys.stderr)
    sys.exit(4)
low = label.strip().lower()
family = low if low == "cpu" or low in hardware.families() else hardware.get_hardware(label).family
for arg in args:
    path = Path(arg)
    if not path.is_dir():
        print(arg)  # named on purpose: always run (a missing file is pytest's error to report)
        continue
    for f in sorted(path.rglob("*.y*ml")):
        if f.suffix not in (".yaml", ".yml") or not looks_like_prediction_file(f):
            continue
        try:
            spec = load_spec(f)
        except RooflineError as exc:  # a broken file still runs: pytest reports it as an ERROR
            print(f"nightly.sh: {f}: cannot read its hardware ({exc.__class__.__name__}); running it anyway",
                  file=sys.stderr)
            print(f)
            continue
        try:
            if hardware.get_hardware(spec.hardware).family == family:
                print(f)
        except RooflineError:
            pass  # hardware the catalog does not know: not a file for a catalog label
PY
) || exit $?
while IFS= read -r line; do [ -n "$line" ] && files+=("$line"); done <<<"$selected"
if [ ${#files[@]} -eq 0 ]; then
  echo "nightly.sh: no prediction file in ${paths[*]} is planned on $label (its hardware: a $label variant);" \
       "name the files to run" >&2
  exit 5
fi

out=${ROOFLINE_OUT:-roofline-nightly/$label}
history=${ROOFLINE_HISTORY:-roofline-history}
pytest_cmd=("$py" -m pytest --gpu "$label" "${files[@]}"
  --roofline-out "$out/results"
  --html "$out/report.html" --self-contained-html
  --roofline-scorecard "$out/scorecard.html"
  --roofline-history "$history" --roofline-history-label "$label"
  --junitxml "$out/junit.xml")
[ -z "${ROOFLINE_DRIFT:-}" ] || pytest_cmd+=(--roofline-drift "$ROOFLINE_DRIFT")
[ "${ROOFLINE_DRIFT_FAIL:-0}" != 1 ] || pytest_cmd+=(--roofline-drift-fail)
[ -z "${ROOFLINE_DRIFT_MIN_COMPARED:-}" ] || pytest_cmd+=(--roofline-drift-min-compared "$ROOFLINE_DRIFT_MIN_COMPARED")
[ ${#extra[@]} -eq 0 ] || pytest_cmd+=("${extra[@]}")
trend_cmd=("$py" -m pytest_roofline.cli history "$history" -o "$out/trend.html")

show() {  # one runnable line per command; a password in a database URI is printed as ***
  printf '%q ' "$@" | sed -e 's/ $//' -e 's#\(://[^:/@ ]*\):[^@/ ]*@#\1:***@#g'
  printf '\n'
}

if [ "$dry_run" = 1 ]; then
  show "${pytest_cmd[@]}"
  show "${trend_cmd[@]}"
  exit 0
fi

if [ "$label" != cpu ]; then
  devices=$(nvidia-smi -L 2>/dev/null || amd-smi list 2>/dev/null || rocm-smi --showproductname 2>/dev/null || true)
  if ! grep -qi 'gpu' <<<"$devices"; then
    echo "nightly.sh: --gpu $label needs a GPU, and this machine shows none (nvidia-smi -L, amd-smi list," \
         "rocm-smi). Run it on the GPU box, or see the commands with: scripts/nightly.sh --dry-run $label" >&2
    exit 6
  fi
fi
if ! "$py" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)" 2>/dev/null; then
  echo "nightly.sh: $py has no vllm; on a GPU box: pip install \".[vllm,html]\" in that venv" \
       "(README, 'Installing on a GPU box')" >&2
  exit 6
fi

mkdir -p "$out"
# a folder store: made on the first night only inside a folder that exists, as the plugin makes one (never
# mkdir -p: a mistyped or unmounted path is the plugin's usage error, exit 4, not a new empty store)
case "$history" in
  *:*) ;;
  *) if [ ! -e "$history" ] && [ -d "$(dirname -- "$history")" ]; then mkdir -- "$history"; fi ;;
esac
echo "nightly.sh: $label, ${#files[@]} prediction file(s), history $(show "$history"), artefacts in $out" >&2
show "${pytest_cmd[@]}" >&2
rc=0
"${pytest_cmd[@]}" || rc=$?
if ! "${trend_cmd[@]}"; then
  echo "nightly.sh: the trend page could not be rendered (pytest's exit code $rc stands)" >&2
fi
case "$rc" in
  0) ;;
  5) echo "nightly.sh: pytest collected no prediction (exit 5): the night failed" >&2 ;;
  *) echo "nightly.sh: pytest exited $rc: the night failed (the report, scorecard and trend page are in $out)" >&2 ;;
esac
exit "$rc"
