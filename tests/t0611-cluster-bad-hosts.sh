#!/usr/bin/env bash
# scripts/gpubpf-cluster refuses node names that ssh, pdsh, srun or kubectl
# would read as options (-oProxyCommand=... runs a command on this machine)
# or as pdsh host-list syntax, from every source of node names, with one
# line naming the bad name and exit status 2, before anything is run; a
# good name reaches ssh after "--".  ssh, pdsh, srun, squeue, scontrol and
# kubectl are stand-ins on PATH that log how they were called.
. "$(dirname "$0")/lib.sh"
test_description "gpubpf-cluster: host names that would be options are refused, nothing runs"
require_cmd base64 awk

CLUSTER="$GPUBPF_ROOT/scripts/gpubpf-cluster"
FAKE="$TMPD/bin"
CALLS="$TMPD/calls"   # one file per stand-in call: $CALLS.PID (calls run at once)
mkdir -p "$FAKE"
for c in ssh pdsh srun squeue scontrol kubectl; do
	cat >"$FAKE/$c" <<EOF
#!/bin/sh
{ printf '%s' "$c"; for a in "\$@"; do printf ' [%s]' "\$a"; done; echo; } >>"$CALLS.\$\$"
case "$c \$1" in
"squeue "*) echo "gpu-node1"; exit 0 ;;
"scontrol "*) cat "$TMPD/slurm-nodes"; exit 0 ;;
"kubectl get") cat "$TMPD/pods"; exit 0 ;;
esac
exit 255
EOF
	chmod +x "$FAKE/$c"
done
export PATH="$FAKE:$PATH"
PWNED="$TMPD/pwned"
EVIL="-oProxyCommand=touch $PWNED"

n=0
# refused ARGS...: gpubpf-cluster record ARGS must exit 2 with one line on
# stderr naming the bad node, write nothing on stdout, run nothing (no
# stand-in called but the listing ones) and create no output directory.
refused() {
	local desc=$1 out="$TMPD/out$n" rc=0 err lines
	shift
	n=$((n + 1))
	rm -f "$CALLS".*
	"$CLUSTER" record -d 1s --lead 0 -o "$out" --local-gpubpf /bin/true "$@" \
		>"$TMPD/stdout" 2>"$TMPD/stderr" || rc=$?
	err=$(cat "$TMPD/stderr")
	lines=$(wc -l <"$TMPD/stderr")
	local ran
	ran=$(cat "$CALLS".* 2>/dev/null | grep -Ev '^(squeue|scontrol|kubectl \[get\])')
	if ((rc == 2 && lines == 1)) && [[ ! -s "$TMPD/stdout" && -z "$ran" && ! -e "$out" && ! -e "$PWNED" ]] &&
		[[ "$err" =~ ^gpubpf-cluster:\ invalid\ node\ name\ \' ]]; then
		pass "$desc: refused ($err)"
	else
		fail "$desc: refused with one line, exit 2, nothing run"
		diag "exit status $rc; stderr ($lines lines):"
		diag "$err"
		[[ -n "$ran" ]] && diag "ran: $ran"
		[[ -e "$PWNED" ]] && diag "the ProxyCommand ran"
		[[ -e "$out" ]] && diag "$out was created"
		return 1
	fi
}

plan 13
refused "--hosts -oProxyCommand=..., plain ssh" --no-pdsh --hosts "$EVIL"
refused "--hosts -oProxyCommand=..., pdsh" --hosts "good1,$EVIL"
refused "--hosts user@-oProxyCommand=..." --no-pdsh --hosts "root@$EVIL"
refused "--hosts -l..@host (an option as the user)" --no-pdsh --hosts "-lroot@host1"
refused "--hosts @host (empty user)" --no-pdsh --hosts "@host1"
refused "--hosts with pdsh range syntax" --hosts "node[1-3]"
refused "--hosts exec:host (a pdsh module prefix) with pdsh" --hosts "exec:host1"
printf '# hosts\ngood1 slots=8\n%s slots=8\n' "$EVIL" >"$TMPD/hostfile"
refused "--hostfile line -oProxyCommand=..." --no-pdsh --hostfile "$TMPD/hostfile"
printf 'gpu-node1\n-oProxyCommand=touch %s\n' "$PWNED" >"$TMPD/slurm-nodes"
refused "a Slurm node list with -oProxyCommand=..." --slurm-job 42
printf 'trainer-0\n--kubeconfig=/tmp/evil\n' >"$TMPD/pods"
refused "a pod named --kubeconfig=..." --k8s app=trainer

# a good name goes on, and reaches ssh after "--" (the stand-in fails, so
# the node is reported unreachable: exit 2, "no node recorded")
rm -f "$CALLS".*
rc=0
"$CLUSTER" record -d 1s --lead 0 -o "$TMPD/good" --local-gpubpf /bin/true --no-pdsh \
	--hosts "alice@node-1.example,fe80::1" >"$TMPD/stdout" 2>"$TMPD/stderr" || rc=$?
is "good names: recorded nowhere (the ssh stand-in fails), exit 2" "$rc" 2
like "good names: ssh gets '-- alice@node-1.example'" "$(cat "$CALLS".* | grep -m1 'node-1')" \
	'\[--\] \[alice@node-1\.example\] \[sh -c '
like "good names: ssh gets '-- fe80::1'" "$(cat "$CALLS".* | grep -m1 'fe80')" '\[--\] \[fe80::1\] \[sh -c '
