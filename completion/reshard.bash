# bash completion for reshard(1)                         -*- shell-script -*-
#
# Installed by `cmake --install` as
# share/bash-completion/completions/reshard, where bash-completion loads it
# on first use; or source it from ~/.bashrc.  It needs nothing from the
# bash-completion package.
#
# The commands are the table of src/main.c, the options each command's
# longopts in src/cli/cli_*.c, the steps those of src/strategy/*.c.
# tests/test_man.sh checks all three against the binary and the sources.

_reshard_commands="dry-run route explain run verify status log abort demo"
_reshard_steps="preflight pre-verify capture copy catch-up fence final-catch-up
promote verify publish unfence purge final-check"

# The long options of COMMAND.
_reshard_options() {
	case $1 in
	dry-run) echo "--keys --table --summary --format --top --help" ;;
	route) echo "--table --help" ;;
	explain) echo "--format --help" ;;
	run) echo "--until --yes --help" ;;
	verify) echo "--format --help" ;;
	status) echo "--format --help" ;;
	log) echo "--format --help" ;;
	abort) echo "--help" ;;
	demo) echo "--rows --help" ;;
	esac
}

# Whether OPTION takes a value (the next word, or after '=').
_reshard_takes_value() {
	case $1 in
	--keys | --table | --format | --top | --until | --rows) return 0 ;;
	esac
	return 1
}

# Add to COMPREPLY the words of compgen ARGS..., one a line (file names
# may hold spaces).
_reshard_add() {
	local word
	while IFS= read -r word; do
		COMPREPLY+=("$word")
	done < <(compgen "$@")
}

# Plan files: *.cfg, and folders to look into.
_reshard_plans() {
	compopt -o filenames 2>/dev/null
	_reshard_add -f -X '!*.cfg' -- "$1"
	_reshard_add -d -- "$1"
}

# The values of OPTION of COMMAND that start with CUR.
_reshard_values() {
	local command=$1 option=$2 cur=$3
	case $option in
	--format)
		if [ "$command" = dry-run ]; then
			_reshard_add -W "tsv json" -- "$cur"
		else
			_reshard_add -W "text json" -- "$cur"
		fi
		;;
	--until) _reshard_add -W "$_reshard_steps" -- "$cur" ;;
	--keys)
		compopt -o filenames 2>/dev/null
		_reshard_add -W "-" -- "$cur"
		_reshard_add -f -- "$cur"
		;;
	esac
	# --table, --top, --rows: a name or a number, nothing to offer.
}

_reshard() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev="" command option
	local i word positional=0 dashdash=0

	COMPREPLY=()
	[ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
	if [ "$COMP_CWORD" -eq 1 ]; then
		_reshard_add -W "$_reshard_commands --help --version" -- "$cur"
		return 0
	fi
	command=${COMP_WORDS[1]}
	case " $_reshard_commands " in
	*" $command "*) ;;
	*) return 0 ;;
	esac

	# An option's value: --opt VALUE, or --opt=VALUE whether or not
	# COMP_WORDBREAKS splits at '='.
	if [ "$cur" = "=" ] && [[ $prev == --* ]]; then
		_reshard_values "$command" "$prev" ""
		return 0
	fi
	if [ "$prev" = "=" ] && [ "$COMP_CWORD" -gt 2 ] &&
		[[ ${COMP_WORDS[COMP_CWORD - 2]} == --* ]]; then
		_reshard_values "$command" "${COMP_WORDS[COMP_CWORD - 2]}" "$cur"
		return 0
	fi
	if [[ $cur == --*=* ]]; then
		option=${cur%%=*}
		_reshard_values "$command" "$option" "${cur#*=}"
		for i in "${!COMPREPLY[@]}"; do
			COMPREPLY[i]="$option=${COMPREPLY[i]}"
		done
		return 0
	fi
	if _reshard_takes_value "$prev" && [ "$COMP_CWORD" -gt 2 ]; then
		_reshard_values "$command" "$prev" "$cur"
		return 0
	fi

	# Count the arguments before the cursor that are not options or their
	# values: the first is the plan (demo: the folder).
	for ((i = 2; i < COMP_CWORD; i++)); do
		word=${COMP_WORDS[i]}
		if [ "$dashdash" -eq 1 ]; then
			positional=$((positional + 1))
		elif [ "$word" = "--" ]; then
			dashdash=1
		elif [ "$word" = "=" ]; then
			i=$((i + 1)) # --opt = VALUE, split by COMP_WORDBREAKS
		elif [[ $word == -* ]]; then
			_reshard_takes_value "$word" && [[ ${COMP_WORDS[i + 1]} != = ]] &&
				i=$((i + 1))
		else
			positional=$((positional + 1))
		fi
	done

	if [[ $cur == -* ]] && [ "$dashdash" -eq 0 ]; then
		_reshard_add -W "$(_reshard_options "$command")" -- "$cur"
		return 0
	fi
	if [ "$command" = demo ]; then
		if [ "$positional" -eq 0 ]; then
			compopt -o filenames 2>/dev/null
			_reshard_add -d -- "$cur"
		fi
		return 0
	fi
	# route's keys, after the plan, are the operator's.
	[ "$positional" -eq 0 ] && _reshard_plans "$cur"
	return 0
}

complete -F _reshard reshard
