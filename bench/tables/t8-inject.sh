#!/usr/bin/env bash
# Table 8: the injection's pause, a thread judged by its unwound call chain
# (the injector's way) against the conservative stack scan alone
# (MEMPROF_BPF_INJECT_SCAN_ONLY=1, the old way), side by side: each round
# injects every target both ways, the order alternating between rounds.
# Targets: mallocmix waiting for its signal, the 16-thread hammer of the
# kill tests (threads in and out of malloc), bash waiting in read, and a
# thread whose frame holds stale addresses inside malloc.
set -uo pipefail
. bench/lib/common.sh
DIR=$WORK/t8
mkdir -p "$DIR"
LOADER=$BUILD/memprof-bpf
MM=$BUILD/bench/mallocmix
HAMMER=$BUILD/tests/inject/progs/hammer
STALE=$BUILD/tests/inject/progs/stale_words
ROUNDS=$((REPS * 2))

# start_target NAME: starts it, sets tpid (0 if it cannot run); cleanup in stop_target.
start_target() {
	local name=$1 ready=$DIR/ready stop=$DIR/stop fifo=$DIR/fifo
	rm -f "$ready" "$stop" "$fifo"
	tpid=0
	case $name in
	mallocmix)
		[ -x "$MM" ] || return 1
		"$MM" --wait-signal --iterations 1000 >"$DIR/mm.out" &
		tpid=$!
		wait_for_line "$DIR/mm.out" '^ready ' 30 || return 1
		;;
	hammer)
		[ -x "$HAMMER" ] || return 1
		"$HAMMER" "$ready" "$stop" 16 >/dev/null &
		tpid=$!
		wait_for_line "$ready" '[0-9]' 30 || return 1
		;;
	bash-read)
		mkfifo "$fifo"
		exec 4<>"$fifo" # a writer stays: bash's open returns, its read waits
		bash -c 'read x <"$0"; [ "$x" = go ]' "$fifo" &
		tpid=$!
		# Wait until it blocks in read (system call 0).
		for _ in $(seq 500); do
			[ "$(cut -d' ' -f1 /proc/$tpid/syscall 2>/dev/null)" = 0 ] && break
			sleep 0.01
		done
		;;
	stale-words)
		[ -x "$STALE" ] || return 1
		mkfifo "$fifo"
		exec 4<>"$fifo"
		"$STALE" "$ready" "$fifo" >/dev/null &
		tpid=$!
		wait_for_line "$ready" '.' 30 || return 1
		;;
	esac
	return 0
}

stop_target() {
	local name=$1
	case $name in
	mallocmix) kill -9 "$tpid" 2>/dev/null ;;
	hammer) touch "$DIR/stop" ;;
	bash-read) echo go >&4; exec 4>&- ;;
	stale-words) echo x >&4; exec 4>&- ;;
	esac
	wait "$tpid" 2>/dev/null
}

# One injection: prints "TARGET JUDGE exit pause_ms total_ms judge_ms judge_max_ms".
inject_once() {
	local name=$1 judge=$2 err=$DIR/loader.err code pause total jt jm
	if ! start_target "$name"; then
		stop_target "$name"
		echo "$name $judge norun - - - -"
		return
	fi
	if [ "$judge" = scan ]; then
		MEMPROF_BPF_INJECT_SCAN_ONLY=1 timeout 60 "$LOADER" attach "$tpid" -d 0.1 -o /dev/null -v 2>"$err"
	else
		timeout 60 "$LOADER" attach "$tpid" -d 0.1 -o /dev/null -v 2>"$err"
	fi
	code=$?
	pause=$(sed -n 's/.*paused \([0-9.]*\) ms.*/\1/p' "$err" | head -n 1)
	total=$(sed -n 's/.*interruption(s), \([0-9.]*\) ms in all.*/\1/p' "$err" | head -n 1)
	jt=$(sed -n 's/.*judging took \([0-9.]*\) ms of the pause.*/\1/p' "$err" | head -n 1)
	jm=$(sed -n 's/.*at most \([0-9.]*\) ms for any thread.*/\1/p' "$err" | head -n 1)
	stop_target "$name"
	echo "$name $judge $code ${pause:--} ${total:--} ${jt:--} ${jm:--}"
}

if [ ! -x "$LOADER" ]; then
	echo "## Table 8: the injection's pause"
	echo
	na "$LOADER is not built"
	exit 0
fi
log "table 8: injection pause, chain against scan ($ROUNDS rounds)"
: >"$DIR/runs.txt"
targets="mallocmix hammer bash-read stale-words"
for ((r = 0; r < ROUNDS; r++)); do
	if ((r % 2)); then order="scan chain"; else order="chain scan"; fi
	for t in $targets; do
		for j in $order; do
			inject_once "$t" "$j" >>"$DIR/runs.txt"
		done
	done
done

python3 - "$DIR/runs.txt" "$ROUNDS" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
rounds = int(sys.argv[2])
names = {"mallocmix": "mallocmix waiting for a signal (1 thread)",
         "hammer": "hammer: 16 threads allocating in bursts",
         "bash-read": "bash -c 'read x' waiting on a fifo",
         "stale-words": "a thread blocked in read whose frame holds stale addresses in malloc"}
print("## Table 8: the injection's pause (call chain against stack scan)")
print()
print(f"`memprof-bpf attach PID` on a running program without probes, {rounds} injections per")
print("target and way, the two ways alternating. Pause: how long the thread the injector")
print("used was stopped (from the request that stopped it to the end of its dlopen call, the")
print("call itself included); judging: the part of that pause spent deciding (the stop, its")
print("registers, the unwind or scan); judging, any: the longest such stop of any thread")
print("interrupted; total: the time to find that thread, over every interruption. *chain*: each stopped thread is")
print("judged by its call chain unwound from its call frame information (libdwfl), with the")
print("stack scan only above a frame it cannot unwind; *scan*: every word of the stack that")
print("points into unsafe code counts as a return address (MEMPROF_BPF_INJECT_SCAN_ONLY=1, the")
print("judgement before the unwinder). Medians, with the range.")
print()
print("| target | injected (chain) | injected (scan) | pause chain ms | pause scan ms | pause chain / scan | judging chain ms | judging scan ms | judging, any: chain ms | total chain ms | total scan ms |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
def fmt(v):
    return f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})" if v else "-"
for t in names:
    c = {}
    for j in ("chain", "scan"):
        rs = [r for r in rows if r[0] == t and r[1] == j]
        ok = [r for r in rs if r[2] == "0" and r[3] != "-"]
        col = lambda k: [float(r[k]) for r in ok if len(r) > k and r[k] != "-"]
        c[j] = (rs, [float(r[3]) for r in ok], col(4), col(5), col(6))
    if all(r[2] == "norun" for j in c for r in c[j][0]):
        print(f"| {names[t]} | not available: the target is not built | | | | | | | | | |")
        continue
    pc, ps = c["chain"][1], c["scan"][1]
    ratio = "-"
    if pc and ps:
        ratio = f"{statistics.median(pc) / statistics.median(ps):.2f}"
    inj = lambda j: f"{len(c[j][1])}/{len(c[j][0])}"
    print(f"| {names[t]} | {inj('chain')} | {inj('scan')} | {fmt(pc)} | {fmt(ps)} | {ratio} | {fmt(c['chain'][3])} | {fmt(c['scan'][3])} | {fmt(c['chain'][4])} | {fmt(c['chain'][2])} | {fmt(c['scan'][2])} |")
print()
print("**What this means.** The judgement is the injector's own cost: the stop, the")
print("registers and the unwind (libdwfl, the modules' call frame information read before any")
print("thread stops) or the scan. The rest of the pause is the target's own dlopen of the")
print("library and its constructor, which on a busy many-threaded program waits for a CPU")
print("like any of its threads: the pause ratio there reflects which thread was chosen and how")
print("busy the machine was, not the judgement. Where the scan never injects (stale words,")
print("bash), a refusal after 5 s was the old outcome; the chain finds the thread safe at its")
print("first interruption.")
EOF
