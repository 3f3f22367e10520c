#!/bin/sh
# The fleet report of a Kubernetes cluster, run by fleet-report-cronjob.yaml: two reports, their Prometheus
# metrics delivered to something that alerts, and an exit status that fails the Job when a node must be drained.
#
#   fleet-report.sh            (settings from the environment, defaults in brackets)
#
# SCANS [/scans]: the shared volume. SCANS/nodes holds the passive scans (node-check-daemonset.yaml), one per
# node, rewritten every 6 hours; SCANS/bench/<round>/ the benchmark scans of one round (node-bench-cronjob.yaml).
# NODES_FILE [/config/nodes.txt]: every GPU node, so a node that never scans is missing.
# POLICY_FILE [/config/policy.toml]: its [fleet] table (stale scans fail: a node whose check hangs stops
# writing, and its last scan ages past --max-age).
# REPORTS [/scans/reports]: where the HTML and .prom files go (never among the scans).
# PUSHGATEWAY: a Prometheus Pushgateway (http://pushgateway.monitoring:9091): each report's metrics replace
# its group there (job gpuadvisor_fleet, report passive | bench). TEXTFILE_DIR: instead, a node_exporter
# textfile-collector directory (pin the CronJob to that node; the file is renamed into place, never half-written).
#
# 1. passive: every node's latest passive scan against the node list: lost GPUs, NVLinks or NICs, the nodes' own
#    findings (Xids, ECC, /dev/shm, memlock ...), drift, failed, missing and stale (older than 13 hours: two
#    missed rounds) nodes.
# 2. bench: the newest finished benchmark round (a directory untouched for 30 minutes; the round's Job has a
#    20-minute deadline): stragglers and slow links against the measured noise. A node that was busy (its
#    benchmark pod stayed Pending until the deadline) has no scan in the round: it is not measured, so it is
#    in neither the report nor the drain list (the passive report still covers it); no --expect here. A round
#    older than 8 days (the benchmark stopped running) makes every node stale, which fails.
#
# Each report also exports gpuadvisor_fleet_report_exit_code{report=...}. Exit status: 0 nothing fails; 1 a
# node fails (drain it: the Job fails, so kube_job_failed alerts too); 2 a report could not run or its
# metrics could not be delivered.
set -u
SCANS=${SCANS:-/scans}
NODES_FILE=${NODES_FILE:-/config/nodes.txt}
POLICY_FILE=${POLICY_FILE:-/config/policy.toml}
REPORTS=${REPORTS:-$SCANS/reports}
PUSHGATEWAY=${PUSHGATEWAY:-}
TEXTFILE_DIR=${TEXTFILE_DIR:-}
GPUADVISOR=${GPUADVISOR:-gpuadvisor}
mkdir -p "$REPORTS" || exit 2
status=0

worse() { # the exit status so far and a report's: 2 over 1 over 0
    if [ "$1" -ge 2 ] || [ "$status" -ge 2 ]; then status=2; elif [ "$1" -eq 1 ]; then status=1; fi
}

deliver() { # report name, the report's exit status
    prom="$REPORTS/$1.prom"
    body="$REPORTS/.$1.prom.push"
    if [ "$2" -ge 2 ] || [ ! -s "$prom" ]; then
        : >"$prom"   # a report that could not run exports its exit code only (not the last run's metrics)
    fi
    {
        cat "$prom"
        echo "# HELP gpuadvisor_fleet_report_exit_code Exit status of the fleet report: 0 ok, 1 a node fails, 2 no report."
        echo "# TYPE gpuadvisor_fleet_report_exit_code gauge"
        echo "gpuadvisor_fleet_report_exit_code{report=\"$1\"} $2"
    } >"$body" || { worse 2; return; }
    if [ -n "$PUSHGATEWAY" ]; then
        curl -sS --fail --max-time 60 -X PUT --data-binary "@$body" \
            "$PUSHGATEWAY/metrics/job/gpuadvisor_fleet/report/$1" || {
            echo "fleet-report: cannot push the $1 metrics to $PUSHGATEWAY" >&2
            worse 2
        }
    fi
    if [ -n "$TEXTFILE_DIR" ]; then
        tmp="$TEXTFILE_DIR/.gpuadvisor_fleet_$1.prom.tmp"   # node_exporter reads *.prom only
        if ! { cp "$body" "$tmp" && mv -f "$tmp" "$TEXTFILE_DIR/gpuadvisor_fleet_$1.prom"; }; then
            echo "fleet-report: cannot write the $1 metrics into $TEXTFILE_DIR" >&2
            worse 2
        fi
    fi
    rm -f "$body"
}

"$GPUADVISOR" fleet "$SCANS/nodes" --expect-file "$NODES_FILE" --max-age 13h --policy "$POLICY_FILE" \
    --html "$REPORTS/passive.html" --format prom -o "$REPORTS/passive.prom" -q
rc=$?
worse "$rc"
deliver passive "$rc"

# the newest by time of last change (a round started by hand, kubectl create job --from=cronjob/..., counts too)
ROUND=$(find "$SCANS/bench" -mindepth 1 -maxdepth 1 -type d -mmin +30 -exec ls -1dt -- {} + 2>/dev/null | head -n 1)
if [ -n "$ROUND" ]; then
    "$GPUADVISOR" fleet "$ROUND" --max-age 8d --policy "$POLICY_FILE" \
        --html "$REPORTS/bench.html" --format prom -o "$REPORTS/bench.prom" -q
    rc=$?
    worse "$rc"
    deliver bench "$rc"
else
    echo "fleet-report: no finished benchmark round under $SCANS/bench yet; passive report only" >&2
fi
echo "fleet-report: $REPORTS/passive.html${ROUND:+, $REPORTS/bench.html ($ROUND)}; exit $status" >&2
exit "$status"
