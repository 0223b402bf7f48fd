#!/usr/bin/env bash
# full_disk: a file system that fills up during the copy, with real disks:
# a tmpfs of 64 KB or 1 MB, grown to 64 MB to free space (mounting needs
# root; without, the test says so and is skipped, exit 77).
#   target   n4's database on the small file system: the copy fails with
#            SQLite's "database or disk is full" naming n4 (exit 1), some
#            chunks done and the sources as they were; once the file
#            system is grown, `reshard run` resumes and ends exact
#   journal  the journal on the small file system, filling during the
#            copy (which record finds it full depends on timing: a chunk's
#            start or end, a fact): the run stops with the journal's error
#            (exit 1); grown, it resumes and ends exact
. "$(dirname "$0")/lib.sh"
begin "$@"

mounted=()
unmount_all() {
	local m
	for m in "${mounted[@]}"; do
		[ -z "$m" ] || umount "$m" 2>/dev/null
	done
}
trap 'unmount_all; cleanup' EXIT

# small DIR SIZE: a tmpfs of SIZE at DIR, or exit 77 (skipped) when this
# user cannot mount one.
small() {
	mkdir -p "$1"
	if ! mount -t tmpfs -o "size=$2,mode=0755" tmpfs "$1" 2>/dev/null; then
		echo "ok - # SKIP mounting a tmpfs needs root (uid $(id -u))"
		exit 77
	fi
	mounted+=("$1")
}

# grow DIR: the file system at DIR grown to 64 MB (space freed).
grow() { mount -o remount,size=64m "$1"; }

# unmount DIR: the small file system at DIR goes (before the next fresh).
unmount() { umount "$1" && mounted=("${mounted[@]/$1/}"); }

section full-target
fresh full-target ring
small "$dir/small" 64k
mv n4.db small/n4.db && ln -s small/n4.db n4.db
run_reshard 1 "full-target: the run fails when n4's disk is full (exit 1)" run plan.cfg --yes
has err "n4" "full-target: the error names n4"
has err "database or disk is full" "full-target: the error says the disk is full"
has err "once that is fixed, \`reshard run plan.cfg\` resumes at step copy" \
	"full-target: the error says that run resumes at the copy"
echo "# full-target: $(grep -m1 '^reshard:' err)"
status_json
equals "$(step_field copy state)" failed "full-target: status shows the copy failed"
done_chunks=$(sql -readonly "$plan_name.journal" "SELECT count(*) FROM chunks
	WHERE step = 'copy' AND state = 'done'")
check "full-target: chunks were copied before the disk filled ($done_chunks done)" \
	test "$done_chunks" -gt 0
same_rows "full-target: the sources hold their rows as before" from_owner n0 n1 n2 n3
grow "$dir/small"
run_reshard 0 "full-target: with space again the run resumes and finishes" run plan.cfg --yes
complete full-target
unmount "$dir/small"

section full-journal
fresh full-journal ring
small "$dir/small" 1m
sed -i "s|^name = \"$plan_name\";|&\njournal = \"small/$plan_name.journal\";|" plan.cfg
run_reshard 1 "full-journal: the run fails when the journal's disk is full (exit 1)" run plan.cfg --yes
echo "# full-journal: $(grep -m1 '^reshard:' err)"
has err "ring5.journal: cannot" "full-journal: the error names the journal"
has err "database or disk is full" "full-journal: the error says the disk is full"
grow "$dir/small"
run_reshard 0 "full-journal: with space again the run resumes and finishes" run plan.cfg --yes
complete full-journal
unmount "$dir/small"

finish
