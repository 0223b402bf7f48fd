#!/usr/bin/env bash
# The manual page and the bash completion against the binary they describe:
# docs/reshard.1 renders with man and groff without a warning and documents
# every command `reshard --help` lists, under each every long option its
# `--help` prints, every step and every environment variable the sources
# read; completion/reshard.bash offers the same commands, options, --format
# values and steps; `cmake --install` puts binary, page and completion in
# place.  Usage: tests/test_man.sh PATH/TO/reshard PATH/TO/BUILD [CMAKE]
set -uo pipefail

bin=${1:?usage: test_man.sh PATH/TO/reshard PATH/TO/BUILD [CMAKE]}
build=${2:?usage: test_man.sh PATH/TO/reshard PATH/TO/BUILD [CMAKE]}
cmake=${3:-cmake}
src=$(cd "$(dirname "$0")/.." && pwd)
page=$src/docs/reshard.1
completion=$src/completion/reshard.bash
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

ok() { # ok NAME
	passed=$((passed + 1))
	echo "ok - $1"
}
not_ok() { # not_ok NAME DETAILS...: DETAILS as # comments under it
	local name=$1
	shift
	failed=$((failed + 1))
	echo "not ok - $name"
	[ $# -eq 0 ] || printf '%s\n' "$@" | sed 's/^/#   /'
}
check() { # check NAME COMMAND...: the command must succeed
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}
# same NAME GOT WANT: two word lists, equal as sets
same() {
	local got want
	got=$(tr ' ' '\n' <<<"$2" | sed '/^$/d' | sort -u | tr '\n' ' ')
	want=$(tr ' ' '\n' <<<"$3" | sed '/^$/d' | sort -u | tr '\n' ' ')
	if [ "$got" = "$want" ]; then
		ok "$1"
	else
		not_ok "$1" "got:  $got" "want: $want"
	fi
}

# man and groff are needed: without them nothing here can be checked, and
# that is a failure, not a skip.
for tool in man groff; do
	if ! command -v "$tool" >/dev/null; then
		not_ok "$tool is installed" \
			"install man-db and groff-base (integration/install-deps.sh)"
		echo "$passed passed, $failed failed"
		exit 1
	fi
done

# The page as a reader sees it, at a fixed width, with ASCII hyphens and
# no overstriking.
render() {
	LC_ALL=C.UTF-8 MANWIDTH=100 man -l "$page" 2>/dev/null |
		sed $'s/.\b//g; s/\xe2\x80\x90/-/g; s/\xe2\x88\x92/-/g'
}
# section TITLE: the lines of top-level section TITLE of the rendered page
section() {
	awk -v t="$1" '/^[A-Z]/ { on = ($0 == t); next } on' "$tmp/page.txt"
}
# subsection COMMAND: the COMMANDS subsection "reshard COMMAND ..."
subsection() {
	section COMMANDS | awk -v c="$1" '
		/^   [^ ]/ { on = ($1 == "reshard" && $2 == c); next } on'
}

# (a) The page renders without a warning, with groff's every warning on.
if groff -man -Tutf8 -ww -z "$page" 2>"$tmp/groff.err" &&
	[ ! -s "$tmp/groff.err" ]; then
	ok "groff -man -ww: no warning"
else
	not_ok "groff -man -ww: no warning" "$(cat "$tmp/groff.err")"
fi
if LC_ALL=C.UTF-8 MANWIDTH=100 man --warnings=all -l "$page" \
	>/dev/null 2>"$tmp/man.err" && [ ! -s "$tmp/man.err" ]; then
	ok "man -l: renders without a warning"
else
	not_ok "man -l: renders without a warning" "$(cat "$tmp/man.err")"
fi
render >"$tmp/page.txt"
check "man -l: the page has a NAME and a SYNOPSIS" \
	grep -q '^SYNOPSIS' "$tmp/page.txt"
version=$("$bin" --version | sed -n '1s/^reshard //p')
check "man: .TH names the binary's version ($version)" \
	grep -q "^\\.TH RESHARD 1 .* \"reshard $version\"" "$page"

# (b) Every command the binary lists has its synopsis line and its own
# subsection, and that subsection names every long option of the
# command's --help; the general options and every exit status are there.
"$bin" --help >"$tmp/help" 2>&1 || not_ok "reshard --help exits 0"
commands=$(awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }' "$tmp/help" | tr '\n' ' ')
[ -n "$commands" ] || not_ok "reshard --help lists commands" "$(cat "$tmp/help")"
section SYNOPSIS >"$tmp/synopsis"
for command in $commands; do
	check "man: synopsis of $command" grep -Eq "^ +reshard $command( |\$)" "$tmp/synopsis"
	subsection "$command" >"$tmp/sub"
	if [ ! -s "$tmp/sub" ]; then
		not_ok "man: COMMANDS has a subsection 'reshard $command'"
		continue
	fi
	ok "man: COMMANDS has a subsection 'reshard $command'"
	"$bin" "$command" --help >"$tmp/cmdhelp" 2>&1 ||
		not_ok "reshard $command --help exits 0"
	for option in $(grep -o -- '--[a-z][a-z-]*' "$tmp/cmdhelp" | sort -u); do
		check "man: $command documents $option" grep -q -- "$option\\b" "$tmp/sub"
	done
done
for option in --help --version; do
	check "man: $option" grep -q -- "$option\\b" "$tmp/page.txt"
done
section "EXIT STATUS" >"$tmp/exit"
for code in 0 1 2 3 4 99 130; do
	check "man: exit status $code" grep -Eq "^ +$code( |\$)" "$tmp/exit"
done

# Every step of every strategy (the .name of each step definition) and
# every variable the sources read with getenv.
steps=$(sed -n 's/^[[:space:]]*\.name = "\([a-z-]*\)",$/\1/p' "$src"/src/steps/*.c | sort -u | tr '\n' ' ')
[ -n "$steps" ] || not_ok "steps found in src/steps"
section STEPS >"$tmp/steps"
for step in $steps; do
	check "man: step $step" grep -Eq "^ {7}$step( |\$)" "$tmp/steps"
done
section ENVIRONMENT >"$tmp/env"
for variable in $(grep -rho 'getenv("[A-Z_0-9]*")' "$src/src" | sed 's/getenv("\(.*\)")/\1/' | sort -u); do
	check "man: environment variable $variable" grep -q "\\b$variable\\b" "$tmp/env"
done
check "man: password_env variables" grep -q 'password_env' "$tmp/env"

# (c) The completion: valid bash; what it offers for the words given.
check "completion: bash -n" bash -n "$completion"
# offers CWORD WORD...: COMPREPLY of _reshard for COMP_WORDS=(WORD...) and
# COMP_CWORD=CWORD, space-separated, run in $tmp/files.
mkdir -p "$tmp/files/plans"
touch "$tmp/files/a.cfg" "$tmp/files/b.txt" "$tmp/files/my plan.cfg"
offers() {
	(cd "$tmp/files" && bash --norc --noprofile -c '
		. "$1" || exit 1
		COMP_CWORD=$2
		shift 2
		COMP_WORDS=("$@")
		COMPREPLY=()
		_reshard
		printf "%s\n" "${COMPREPLY[@]}"' bash "$completion" "$@") |
		tr '\n' ' '
}
check "completion: registered for reshard" bash --norc --noprofile -c \
	'. "$1" && complete -p reshard | grep -q "_reshard reshard"' bash "$completion"
got=$(offers 1 reshard "")
for command in $commands; do
	case " $got " in
	*" $command "*) ok "completion: offers $command" ;;
	*) not_ok "completion: offers $command" "got: $got" ;;
	esac
done
same "completion: only the binary's commands and --help --version" \
	"$got" "$commands --help --version"
for command in $commands; do
	"$bin" "$command" --help >"$tmp/cmdhelp" 2>&1
	same "completion: options of $command" "$(offers 2 reshard "$command" -)" \
		"$(grep -o -- '--[a-z][a-z-]*' "$tmp/cmdhelp" | sort -u | tr '\n' ' ') --help"
	# --format's values from the usage line, "[--format tsv|json]".
	formats=$(sed -n 's/.*\[--format \([a-z|]*\)\].*/\1/p' "$tmp/cmdhelp" | head -1 | tr '|' ' ')
	if [ -n "$formats" ]; then
		same "completion: $command --format values" \
			"$(offers 4 reshard "$command" a.cfg --format "")" "$formats"
		same "completion: $command --format=j" \
			"$(offers 2 reshard "$command" --format=j)" "--format=json"
	fi
done
same "completion: run --until offers every step" \
	"$(offers 4 reshard run a.cfg --until "")" "$steps"
same "completion: run --until = f (COMP_WORDBREAKS split)" \
	"$(offers 4 reshard run --until = f)" \
	"$(tr ' ' '\n' <<<"$steps" | grep '^f' | tr '\n' ' ')"
same "completion: run PLAN: plan files and folders" \
	"$(offers 2 reshard run "")" "a.cfg my plan.cfg plans"
same "completion: nothing after run's plan" \
	"$(offers 3 reshard run a.cfg "")" ""
same "completion: dry-run --keys PLAN: the plan after an option's value" \
	"$(offers 4 reshard dry-run --keys b.txt "")" "a.cfg my plan.cfg plans"
same "completion: route keys are not completed" \
	"$(offers 3 reshard route a.cfg "")" ""
same "completion: demo DIR: folders" "$(offers 2 reshard demo "")" "plans"

# (d) cmake --install puts the binary, the page and the completion where
# man and bash-completion look.
prefix=$tmp/prefix
if "$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.out" 2>&1; then
	ok "cmake --install"
else
	not_ok "cmake --install" "$(cat "$tmp/install.out")"
fi
check "installed: bin/reshard runs" \
	bash -c '"$1" --version >/dev/null' bash "$prefix/bin/reshard"
check "installed: share/man/man1/reshard.1" cmp -s "$page" "$prefix/share/man/man1/reshard.1"
check "installed: man -M finds reshard(1)" \
	test "$(man -M "$prefix/share/man" -w reshard 2>/dev/null)" = "$prefix/share/man/man1/reshard.1"
check "installed: share/bash-completion/completions/reshard" \
	cmp -s "$completion" "$prefix/share/bash-completion/completions/reshard"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
