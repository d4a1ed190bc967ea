# Sourced by the build and test scripts: `stage NAME CMD...` runs CMD and
# records its wall time; the table of every stage is printed when the script
# exits, passed or failed, so each change to CI sees what it costs.
# Output: "== NAME" before a stage, then at exit
#   == timing (wall seconds)
#   install                 31
#   ...
#   total                 1234
_stage_names=()
_stage_seconds=()
_stage_start_total=$(date +%s)

stage() {
  local name=$1 start rc=0
  shift
  echo "== $name"
  start=$(date +%s)
  "$@" || rc=$?
  _stage_names+=("$name")
  _stage_seconds+=($(($(date +%s) - start)))
  return "$rc"
}

# Adds a row measured elsewhere (e.g. one ctest label of a shared run).
stage_record() {
  _stage_names+=("$1")
  _stage_seconds+=("$2")
}

# Commands run when the script exits, before the table (e.g. stopping a stage
# that runs in the background when another stage failed).
_stage_on_exit=()
stage_on_exit() { _stage_on_exit+=("$*"); }

_stage_summary() {
  local rc=$? i
  for i in "${!_stage_on_exit[@]}"; do eval "${_stage_on_exit[$i]}" || true; done
  ((${#_stage_names[@]})) || return "$rc"
  echo "== timing (wall seconds)"
  for i in "${!_stage_names[@]}"; do
    printf '%-34s %6s\n' "${_stage_names[$i]}" "${_stage_seconds[$i]}"
  done
  printf '%-34s %6s\n' "total" "$(($(date +%s) - _stage_start_total))"
  return "$rc"
}
trap _stage_summary EXIT
