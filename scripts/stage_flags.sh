# Sourced by the scripts that run in numbered stages (icefall's prepare.sh shape): reads --stage and --stop-stage,
# keeps every other argument in train_flags (passed on to train.py), and gives `runs N`: whether stage N runs.
#   read_stage_flags FIRST LAST "$@"      (the caller defines die; -h/--help calls the caller's usage when it has one)
read_stage_flags() {
    local first=$1 last=$2
    shift 2
    stage=$first
    stop_stage=$last
    train_flags=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --stage|--stop-stage)
                [ $# -ge 2 ] || die "$1 needs a value"
                if ! [[ "$2" =~ ^[0-9]+$ ]] || [ "$2" -lt "$first" ] || [ "$2" -gt "$last" ]; then
                    die "$1 takes a stage from $first to $last, got '$2'"
                fi
                if [ "$1" = --stage ]; then stage=$2; else stop_stage=$2; fi
                shift 2 ;;
            -h|--help)
                if declare -F usage > /dev/null; then usage; exit 0; fi
                train_flags+=("$1"); shift ;;
            *) train_flags+=("$1"); shift ;;
        esac
    done
}

runs() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }
