# bash completion for offcpu(1): commands, options and their values.
# The options come from the installed binary's --help, so they cannot drift.
# shellcheck shell=bash

_offcpu_options() {
	# the option column of argp's help: "  -s, --sort=KEYS" or "      --top=N"
	"${1:-offcpu}" "$2" --help 2>/dev/null | grep -E '^ +-' |
		grep -oE -- '^ +(-[A-Za-z?], )?--?[A-Za-z?][A-Za-z-]*' | tr ', ' '\n\n' |
		grep -E -- '^--?[A-Za-z]' | sort -u
}

_offcpu_pids() {
	local p
	for p in /proc/[0-9]*; do
		printf '%s\n' "${p#/proc/}"
	done
}

_offcpu() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} cmd="" i
	local prog=${COMP_WORDS[0]}

	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		record | report) cmd=${COMP_WORDS[i]}; break ;;
		--) return 0 ;;
		esac
	done
	# after "--" of record: the command to run
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [[ $cmd == record && ${COMP_WORDS[i]} == -- ]]; then
			COMPREPLY=($(compgen -c -- "$cur"))
			return 0
		fi
	done
	if [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W "record report help --help --version" -- "$cur"))
		return 0
	fi
	# --opt=value: bash splits at '='
	if [[ $prev == = ]]; then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	elif [[ $cur == --*=* ]]; then
		prev=${cur%%=*}
		cur=${cur#*=}
	fi
	case $cmd:$prev in
	*:-i | *:--input | record:-o | record:--output | report:--pprof | report:--svg | report:--perfetto | report:--timeline | \
	*:--kallsyms | record:--btf | record:--push-token-file)
		COMPREPLY=($(compgen -f -- "$cur"))
		return 0
		;;
	report:--debug-dir | record:--push-spool) COMPREPLY=($(compgen -d -- "$cur")); return 0 ;;
	record:--push-format) COMPREPLY=($(compgen -W "otlp pyroscope" -- "$cur")); return 0 ;;
	record:--push-by) COMPREPLY=($(compgen -W "process cgroup" -- "$cur")); return 0 ;;
	record:--stacks) COMPREPLY=($(compgen -W "user kernel both" -- "$cur")); return 0 ;;
	record:--unwind) COMPREPLY=($(compgen -W "tables fp" -- "$cur")); return 0 ;;
	record:--transport) COMPREPLY=($(compgen -W "ringbuf perfbuf" -- "$cur")); return 0 ;;
	record:--state) COMPREPLY=($(compgen -W "S D R T I S,D S,D,R all" -- "$cur")); return 0 ;;
	record:--switch-output) COMPREPLY=($(compgen -W "signal 100M 1G 30s 10m" -- "$cur")); return 0 ;;
	record:-e | record:--event | report:-e | report:--event)
		COMPREPLY=($(compgen -W "offcpu-time cpu-clock" -- "$cur"))
		return 0
		;;
	record:-p | record:--pid | record:-t | record:--tid | report:--pid | report:--tid)
		COMPREPLY=($(compgen -W "$(_offcpu_pids)" -- "$cur"))
		return 0
		;;
	report:-s | report:--sort)
		# a comma-separated list: complete its last key
		local done="" last=$cur
		if [[ $cur == *,* ]]; then
			done=${cur%,*},
			last=${cur##*,}
		fi
		COMPREPLY=($(compgen -P "$done" -W "comm pid tid dso sym state waker object runtime" -- "$last"))
		return 0
		;;
	record:-d | record:--duration | record:-F | record:--freq | record:-C | record:--cpu | \
	record:-G | record:--cgroup | record:-m | record:--mmap-pages | record:--max-stacks | \
	record:--buffer-size | record:--off-cpu-thresh | record:--flush | record:--unwind-mem | \
	record:--switch-max-files | record:--push | record:--push-interval | record:--push-label | \
	record:--push-spool-size | record:--push-timeout | report:-m | report:--min-percent | report:--top | \
	report:--comm | report:--time)
		return 0 # a value of the user's own
		;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_offcpu_options "$prog" "$cmd")" -- "$cur"))
	elif [[ $cmd == report ]]; then
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}

complete -o default -F _offcpu offcpu
