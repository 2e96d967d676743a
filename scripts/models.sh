#!/usr/bin/env bash
# Check the protocol models in models/ with spin: every model must pass
# (no assertion violated, no invalid end state, the whole state space
# explored) and every mutant must fail.  One line per run: the result, the
# states stored, the time.  Exits 1 if a model fails or a mutant passes.
#
#   scripts/models.sh              # everything
#   scripts/models.sh fcp          # only the runs whose name starts with fcp
#   KEEP=dir scripts/models.sh     # keep the work directory (pan.c, trails)
#   JOBS=1 scripts/models.sh       # one check at a time (default 2)
#
# Installs spin (a Debian package) when it is missing.  docs/models.md
# describes the models, their abstractions and how to add one.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v spin >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq spin; } >/dev/null
fi
CC=${CC:-cc}
filter=${1:-}
work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

# name | model file | spin -D flags | expect: pass (a model) or fail (a mutant) | why it must fail
# | how (mutants): assert (an assertion of the model is violated), end (an
# invalid end state: a thread blocked for ever) or cycle (an acceptance
# cycle: a liveness property violated).  Runs with -DLIVE check the
# model's LTL property with pan -a -f (weak fairness) instead of safety.
runs=(
  "fcp|fcp.pml||pass|"
  "fcp.fail|fcp.pml|-DFAIL|pass|"
  "fcp.switch|fcp.pml|-DSWITCH -DRITER=1|pass|"
  "fcp.2writers|fcp.pml|-DNW=2 -DRITER=1|pass|"
  "fcp~no_membarrier|fcp.pml|-DMUTANT_no_membarrier|fail|a straggler's R1 still in its store buffer|assert"
  "fcp~bump_first|fcp.pml|-DMUTANT_bump_first|fail|a report of the new version before the writer word is visible|assert"
  "fcp~report_inside|fcp.pml|-DMUTANT_report_inside|fail|a report made inside the section counts the reader as done|assert"
  "fcp~lost_trusts|fcp.pml|-DFAIL -DMUTANT_lost_trusts|fail|a failed membarrier trusted as if it had run|assert"
  "fcp~by_threads_trusts|fcp.pml|-DFAIL -DMUTANT_by_threads_trusts|fail|barrier_by_threads without a report or barrier moment per thread|assert"
  "fcp~switch_no_barrier|fcp.pml|-DSWITCH -DRITER=1 -DMUTANT_switch_no_barrier|fail|writers trust their fence before readers that skipped theirs are flushed|assert"
  "fcp.live|fcp.pml|-DLIVE|pass|"
  "fcp~backout_no_report|fcp.pml|-DLIVE -DMUTANT_backout_no_report|fail|a back-out without a report: the writer only sees the record released between two retries, which fairness does not promise|cycle"
  "fcp_foreign|fcp_foreign.pml|-DRELOCK|pass|"
  "fcp_foreign.fail|fcp_foreign.pml|-DFAIL -DRELOCK|pass|"
  "fcp_foreign.fork|fcp_foreign.pml|-DFORK|pass|"
  "fcp_foreign~no_membarrier|fcp_foreign.pml|-DMUTANT_no_membarrier|fail|the owner's U1 still buffered: both count the passive hold as theirs, the counted hold leaks and the writer waits for ever|end"
  "fcp_foreign~fork_keeps_busy|fcp_foreign.pml|-DFORK -DMUTANT_fork_keeps_busy|fail|a releaser gone at the fork left BUSY: the child waits for it for ever|end"
  "rcu|rcu.pml||pass|"
  "rcu.nest|rcu.pml|-DNEST|pass|"
  "rcu.sig|rcu.pml|-DSIG|pass|"
  "rcu.signest|rcu.pml|-DSIGNEST|pass|"
  "rcu.offline|rcu.pml|-DOFFLINE|pass|"
  "rcu.offline_sig|rcu.pml|-DSIG -DOFFLINE -DR1ITER=0|pass|"
  "rcu.claim|rcu.pml|-DCLAIM|pass|"
  "rcu.fencemode|rcu.pml|-DFENCEMODE|pass|"
  "rcu.switch|rcu.pml|-DSWITCH -DR1ITER=0|pass|"
  "rcu.2sync|rcu.pml|-DNU=2 -DR1ITER=0|pass|"
  "rcu~offline_plain|rcu.pml|-DOFFLINE -DMUTANT_offline_plain|fail|a report without a fence from the offline value|assert"
  "rcu~nest_u1_first|rcu.pml|-DSIGNEST -DR1ITER=0 -DMUTANT_nest_u1_first|fail|an inner unlock takes the record out of flight while sections are open (the nesting invariant breaks)|assert"
  "rcu~nest_no_offline|rcu.pml|-DSIG -DOFFLINE -DR1ITER=0 -DMUTANT_nest_no_offline|fail|a handler nests in an outermost lock that has not left the offline state|assert"
  "rcu~claim_no_fence|rcu.pml|-DCLAIM -DMUTANT_claim_no_fence|fail|a grace period trusts a record not yet claimed|assert"
  "rcu~no_gate|rcu.pml|-DFENCEMODE -DMUTANT_no_gate|fail|the fence-free entry without the gate skips the fence in fence mode|assert"
  "rcu~gp_round_down|rcu.pml|-DNU=2 -DR1ITER=0 -DMUTANT_gp_round_down|fail|a caller shares a grace period that began before its update|assert"
  "rcu~switch_gate_open|rcu.pml|-DSWITCH -DR1ITER=0 -DMUTANT_switch_gate_open|fail|a reader skips its fence after the switch to fence mode|assert"
  "rcu.live|rcu.pml|-DLIVE|pass|"
  "rcu~wait_ignores_reports|rcu.pml|-DLIVE -DMUTANT_wait_ignores_reports|fail|a grace period that waits to see each reader outside a section never has to see it: readers that run sections for ever are outside only between two|cycle"
  "rcu_cb|rcu_cb.pml||pass|"
  "rcu_cb~done_newest|rcu_cb.pml|-DMUTANT_done_newest|fail|a barrier that asked while the marker was queued returns before a callback queued behind the marker has run|assert"
  "rcu_cb~default_only|rcu_cb.pml|-DMUTANT_default_only|fail|the barrier does not wait for a callback on the thread's own object|assert"
  "rcu_cb~gp_before_take|rcu_cb.pml|-DMUTANT_gp_before_take|fail|a callback taken after the grace period began runs without one after its call|assert"
  "bravo|bravo.pml|-DRITER=2 -DWITER=2|pass|"
  "bravo.collide|bravo.pml|-DCOLLIDE -DRITER=2|pass|"
  "bravo.try|bravo.pml|-DTRY -DRITER=2|pass|"
  "bravo.shared|bravo.pml|-DSHARED -DRITER=2 -DWITER=2|pass|"
  "bravo.mixed|bravo.pml|-DMIXED -DRITER=1 -DWITER=1|pass|"
  "bravo.wm|bravo.pml|-DWM -DRITER=1 -DWITER=1|pass|"
  "bravo~no_recheck|bravo.pml|-DMUTANT_no_recheck|fail|a reader enters after the writer's scan passed its slot|assert"
  "bravo~pending_first|bravo.pml|-DMIXED -DRITER=1 -DWITER=2 -DMUTANT_pending_first|fail|a revoke_pending stored before the count-in RMW is undone by another writer's finish; the scan gives up and nothing tells the next writer of the reader|assert"
  "bravo~clear_ignores_count|bravo.pml|-DMIXED -DRITER=1 -DWITER=2 -DMUTANT_clear_ignores_count|fail|a writer holding A enters between another writer's count-in RMW and its revoke_pending store|assert"
  "bravo~giveup_clears|bravo.pml|-DMIXED -DRITER=1 -DWITER=1 -DMUTANT_giveup_clears|fail|a give-up that clears revoke_pending lets the next writer in beside the reader it gave up on|assert"
  "bravo~scan_first|bravo.pml|-DMUTANT_scan_first|fail|the scan passes a slot before the bias is off: its reader re-checks the bias still on|assert"
  "bravo~clear_plain|bravo.pml|-DMUTANT_clear_plain|fail|the cleared bias still in the writer's store buffer when a reader re-checks it|assert"
  "bravo~rebias_counted|bravo.pml|-DMUTANT_rebias_counted|fail|a slow reader turns the bias on while a writer revokes without A|assert"
  "bravo~backout_store|bravo.pml|-DSHARED -DMUTANT_backout_store|fail|the back-out erases a foreign release that marked its slot: the released hold stays in the table|end"
  "bravo2d|bravo2d.pml|-DRITER=2|pass|"
  "bravo2d.2w|bravo2d.pml|-DRITER=2 -DWITER=2|pass|"
  "bravo2d.probe2|bravo2d.pml|-DPROBE2 -DNR=3|pass|"
  "bravo2d.probe2_2s|bravo2d.pml|-DPROBE2 -DRITER=2|pass|"
  "bravo2d~scan_own_row|bravo2d.pml|-DMUTANT_scan_own_row|fail|a reader whose CPU hint was another row publishes where the scan does not look|assert"
  "bravo2d~probe2_unscanned|bravo2d.pml|-DPROBE2 -DMUTANT_probe2_unscanned|fail|a reader publishes in another slot of the group, which the scan skips|assert"
  "bravo2d~unlock_recomputes|bravo2d.pml|-DMUTANT_unlock_recomputes|fail|a migrated reader's unlock clears the slot of the row it runs on now: its hold stays in the table and the writer waits for ever|end"
  "bravo_dyn|bravo_dyn.pml||pass|"
  "bravo_dyn.2w|bravo_dyn.pml|-DWITER=2|pass|"
  "bravo_dyn.3resizes|bravo_dyn.pml|-DRESIZES=3|pass|"
  "bravo_dyn.2r|bravo_dyn.pml|-DNR=2 -DRITER=1|pass|"
  "bravo_dyn~cur_first|bravo_dyn.pml|-DMUTANT_cur_first|fail|the writer loads the new cur and an old still NULL: the table its reader published in is never scanned|assert"
  "bravo_dyn~writer_old_first|bravo_dyn.pml|-DMUTANT_writer_old_first|fail|a resize between the writer's loads of old and cur hides the table that became old|assert"
  "bravo_dyn~reopen_first|bravo_dyn.pml|-DMUTANT_reopen_first|fail|a reader that loaded cur before the first resize publishes in the reused table, reopened while neither cur nor old|assert"
  "bravo_dyn~sweep_ignores_readers|bravo_dyn.pml|-DMUTANT_sweep_ignores_readers|fail|old = NULL while a reader still holds a slot of it|assert"
  "bravo_dyn~scan_cur_only|bravo_dyn.pml|-DMUTANT_scan_cur_only|fail|a reader published in the table that just became old|assert"
  "rlu|rlu.pml||pass|"
  "rlu.ff|rlu.pml|-DFF|pass|"
  "rlu.close|rlu.pml|-DCLOSE -DNR=1|pass|"
  "rlu.2w|rlu.pml|-DNR=1 -DNW=2|pass|"
  "rlu.ff2|rlu.pml|-DFF -DNR=1 -DRITER=2|pass|"
  "rlu~naive_clock|rlu.pml|-DNR=1 -DNW=2 -DMUTANT_naive_clock|fail|the write-clock race of the reference: a section steals one copy of a commit and reads the other's original|assert"
  "rlu~no_gate|rlu.pml|-DCLOSE -DNR=1 -DMUTANT_no_gate|fail|the fence-free entry without the gate skips its fence after the close's membarrier|assert"
  "rlu~sync_trusts_counter|rlu.pml|-DFF -DMUTANT_sync_trusts_counter|fail|synchronize skips a reader whose odd run counter is still in its store buffer|assert"
  "rlu~moved_settles|rlu.pml|-DFF -DNR=1 -DRITER=2 -DMUTANT_moved_settles|fail|the torn section: a run counter that moved before the membarrier settles a reader whose next section read the old clock|assert"
  "rlu~sync_before_step|rlu.pml|-DMUTANT_sync_before_step|fail|synchronize skips a reader whose run counter it read before the clock step|assert"
  "rlu~no_entry_fence|rlu.pml|-DMUTANT_no_entry_fence|fail|the fenced entry without its fence: the odd run counter still buffered when the writer looks|assert"
  "rlu.live|rlu.pml|-DLIVE -DNR=1|pass|"
  "rlu.live_ff|rlu.pml|-DLIVE -DNR=1 -DFF|pass|"
  "rlu~wait_outside|rlu.pml|-DLIVE -DNR=1 -DMUTANT_wait_outside|fail|synchronize waits to see the reader between two sections, which a reader that runs sections for ever never has to show it|cycle"
  "rlu_defer|rlu_defer.pml||pass|"
  "rlu_defer~defer_unlocks|rlu_defer.pml|-DRITER=0 -DMUTANT_defer_unlocks|fail|a deferred section's objects unlocked before the flush: the other writer copies the original and one commit is lost|assert"
  "rlu_defer~flush_wb_first|rlu_defer.pml|-DMUTANT_flush_wb_first|fail|the deferred log written back before synchronize: a section reads A new and B old|assert"
  "rlu_defer~no_request|rlu_defer.pml|-DMUTANT_no_request|fail|no sync request: the owner keeps its deferred locks and the other writer waits for ever|end"
  "prwlock|prwlock.pml||pass|"
  "prwlock.pass|prwlock.pml|-DPASS|pass|"
  "prwlock~active_no_recheck|prwlock.pml|-DMUTANT_active_no_recheck|fail|an active reader enters under a writer that read the count before its increment|assert"
  "prwlock~downgrade_active_late|prwlock.pml|-DPASS -DMUTANT_downgrade_active_late|fail|the next writer's wait_active reads the count before the downgraded reader's increment|assert"
  "prwlock~downgrade_passes|prwlock.pml|-DPASS -DMUTANT_downgrade_passes|fail|a waiting writer takes the passed word without a consensus while the downgraded reader reads|assert"
  "prwlock~pass_two_steps|prwlock.pml|-DPASS -DMUTANT_pass_two_steps|fail|the word is free between the steps: the waiter takes it there, and the late pass is taken by nobody|end"
  "prwlock.upgrade|prwlock.pml|-DUPGRADE|pass|"
  "prwlock.park|prwlock.pml|-DPARK|pass|"
  "prwlock.live|prwlock.pml|-DLIVE|pass|"
  "prwlock~upgrade_counts_self|prwlock.pml|-DUPGRADE -DMUTANT_upgrade_counts_self|fail|an active upgrader waits for its own count to leave|end"
  "prwlock~active_no_wait|prwlock.pml|-DLIVE -DMUTANT_active_no_wait|fail|an active reader that retries without waiting keeps the writer's wait_active from ever seeing 0 for good|cycle"
  "prwlock~wake_first|prwlock.pml|-DPARK -DMUTANT_wake_first|fail|a wake-up sent before LOCKED is cleared: the woken reader parks again and nobody wakes it|end"
)
[ -f models/runs.list ] && while IFS= read -r l; do
  case $l in ''|'#'*) ;; *) runs+=("$l") ;; esac
done < models/runs.list

# One run: build, check, write its line to $work/NAME.line and its
# verdict (ok or bad) to $work/NAME.ok.
one() {
  local name=$1 file=$2 flags=$3 expect=$4 why=$5 how=$6
  local d="$work/$name" t0=$SECONDS ccflags="-DSAFETY" panflags="-m100000"
  local errors states note result ok
  rm -rf "$d"; mkdir -p "$d"
  cp models/*.pml "$d/"
  # LIVE runs check an LTL property (acceptance cycles, weak fairness).
  case " $flags " in *" -DLIVE "*) ccflags="-DNFAIR=4"; panflags="-a -f -m100000" ;; esac
  # shellcheck disable=SC2086
  if ! (cd "$d" && spin -a $flags "$file" >spin.out 2>&1 &&
        $CC -w -O1 $ccflags -DCOLLAPSE -DMEMLIM=4096 -o pan pan.c >cc.out 2>&1); then
    printf '%-32s %-6s %-10s %12s %8s  %s\n' "$name" "$expect" BUILD-ERR - - "see $d/spin.out" >"$d.line"
    echo bad >"$d.ok"; return
  fi
  # shellcheck disable=SC2086
  (cd "$d" && ./pan $panflags >pan.out 2>&1) || true
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$d/pan.out" | head -1)
  states=$(sed -n 's/^ *\([0-9e.+]*\) states, stored.*/\1/p' "$d/pan.out" | head -1)
  note=""
  if [ -z "$errors" ]; then result=NO-RESULT
  elif [ "$errors" != 0 ]; then
    result=FAIL
    note=$(grep -m1 -E 'assertion violated|invalid end state|acceptance cycle' "$d/pan.out" | sed 's/^pan:[0-9]*: *//' || true)
  elif grep -q 'max search depth too small\|out of memory\|MEMLIM\|Search not completed' "$d/pan.out"; then
    result=INCOMPLETE
  else result=pass
  fi
  ok=0
  if [ "$expect" = pass ] && [ "$result" = pass ]; then ok=1; fi
  if [ "$expect" = fail ] && [ "$result" = FAIL ]; then
    case $how:$note in
      assert:*'assertion violated'* | end:*'invalid end state'* | cycle:*'acceptance cycle'*)
        ok=1; note="rejected ($why): $note" ;;
      *) note="rejected for another reason than $how: $note" ;;
    esac
  fi
  [ $ok = 1 ] || note="UNEXPECTED ${note}"
  printf '%-32s %-6s %-10s %12s %8s  %s\n' "$name" "$expect" "$result" "${states:--}" "$((SECONDS - t0))" "$note" >"$d.line"
  if [ $ok = 1 ]; then echo ok >"$d.ok"; else echo bad >"$d.ok"; fi
}

# Run JOBS checks at a time (default 2: pan is single-threaded); print the
# lines in the order of the list as they become ready.
jobs_max=${JOBS:-2}
sel=()
for r in "${runs[@]}"; do
  IFS='|' read -r name _ <<<"$r"
  case $name in "$filter"*) sel+=("$r") ;; esac
done
start=$SECONDS
printf '%-32s %-6s %-10s %12s %8s  %s\n' run expect result states seconds note
next=0 printed=0 running=0 bad=0
flush_lines() {
  while [ $printed -lt ${#sel[@]} ]; do
    local n
    IFS='|' read -r n _ <<<"${sel[$printed]}"
    [ -f "$work/$n.ok" ] || break
    cat "$work/$n.line"
    [ "$(cat "$work/$n.ok")" = ok ] || bad=1
    printed=$((printed + 1))
  done
}
while [ $printed -lt ${#sel[@]} ]; do
  if [ $next -lt ${#sel[@]} ] && [ $running -lt "$jobs_max" ]; then
    IFS='|' read -r name file flags expect why how <<<"${sel[$next]}"
    rm -f "$work/$name.ok"
    one "$name" "$file" "$flags" "$expect" "$why" "$how" &
    next=$((next + 1)) running=$((running + 1))
    continue
  fi
  wait -n || true
  running=$((running - 1))
  flush_lines
done
wait
flush_lines
# CPU time of every spin, cc and pan (user + sys): what the runs cost
# whatever else loads the machine.
times >"$work/times" # (in this shell: a $(...) would ask a subshell)
cpu=$(tail -1 "$work/times" | awk '{ for (i = 1; i <= 2; i++) { split($i, a, "m"); s += a[1] * 60 + a[2] } }
                                  END { printf "%.0f", s }')
echo "models: $((SECONDS - start)) s in all (${#sel[@]} runs, $jobs_max at a time; $cpu s of CPU time)"
if [ $bad != 0 ]; then echo "models: FAILED (a model failed or a mutant passed)"; exit 1; fi
echo "models: ok"
