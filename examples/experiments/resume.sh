# Sourced by the experiments' run.sh scripts whose full run takes hours:
#
#   check_resume MODE ARG OUT
#
# ARG is run.sh's second argument: empty (start afresh) or --resume, which
# only a full run takes and which needs a full run in OUT (its `mode` file)
# to continue. Anything else is the usage error. Returns 0 when ARG asks to
# resume, 1 when it does not; exits on a wrong use, before anything is
# built or trained.
usage() { echo "usage: run.sh [short|full [--resume]]" >&2; exit 2; }

check_resume() {
  local mode=$1 arg=$2 out=$3
  case "$arg" in
    "") return 1 ;;
    --resume)
      [ "$mode" = full ] || usage
      if [ "$(cat "$out/mode" 2>/dev/null)" != full ]; then
        echo "run.sh: no full run to resume in $out" >&2
        exit 1
      fi
      return 0 ;;
    *) usage ;;
  esac
}
