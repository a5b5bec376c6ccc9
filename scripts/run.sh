#!/usr/bin/env bash
# run.sh - `make run`: refgate on this machine, in the foreground. Starts a
# private Redis (unless REFGATE_REDIS_URL names one), REFGATE_WORKERS
# refgate-server workers and nginx in front of them, waits until /healthz
# answers through nginx, makes an API key for the development tenant `dev`,
# prints how to use it, and supervises: Ctrl-C (INT) or TERM stops nginx,
# then the workers (they park their sessions), then Redis, by the PIDs it
# recorded, and exits 0. A worker that dies is started again, with a
# growing pause, and left down after 5 exits within a minute; when nginx or
# Redis dies on its own, the rest are stopped and it exits 1.
#
#   scripts/run.sh                 the above (the Makefile builds first)
#   scripts/run.sh --config-only   only render $RUN/nginx/nginx.conf for this
#                                  environment and check it with nginx -t
#
# Settings (environment; every REFGATE_* variable also reaches the workers):
#   REFGATE_RUN_DIR          [<repo>/.run] logs, pid files, nginx, Redis data, worker scratch
#   REFGATE_WORKERS          [2] workers w1..wN
#   REFGATE_HTTP_PORT        [8080] nginx on 127.0.0.1
#   REFGATE_FCGI_BASE_PORT   [9100] worker i's FastCGI on 127.0.0.1:BASE+i
#   REFGATE_WS_BASE_PORT     [9200] worker i's WebSocket on 127.0.0.1:BASE+i
#   REFGATE_REDIS_PORT       [6390] the private Redis
#   REFGATE_REDIS_MODE       [single] or cluster: a private Redis Cluster of three masters
#                            on REFGATE_REDIS_PORT .. +2 (and their bus ports, +10000)
#   REFGATE_REDIS_URL        an existing Redis instead (none is started); redis://,
#                            redis+cluster:// or redis+sentinel://
#   REFGATE_MAX_BODY_BYTES   [1048576] the body limit, in nginx and the workers
#   REFGATE_START_TIMEOUT_S  [60] how long start-up may take until /healthz answers 200
#   REFGATE_STOP_TIMEOUT_S   [30] how long a worker may take to stop before SIGKILL
#   REFGATE_SERVER_BIN, REFGATE_CLI_BIN   [build/refgate-server, build/refgate-cli]
#
# Each service runs in a session of its own (setsid), so the terminal's
# Ctrl-C reaches only this script, which then stops them in order: Redis
# must outlive the workers, which park their sessions into it.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi # `sh scripts/run.sh` works too
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)

# fd 3 is stderr for our own messages; while stopping, fd 2 goes to /dev/null
# so that bash's job notices ("Killed ...") do not clutter the terminal.
exec 3>&2
# Output may fail (a closed terminal after SIGHUP): that never stops us.
say() { printf 'refgate: %s\n' "$*" 2>/dev/null || true; }
warn() { printf 'refgate: %s\n' "$*" >&3 2>/dev/null || true; }

abspath() { # relative paths are relative to the caller's directory
    case $1 in
    /*) printf '%s' "$1" ;;
    *) printf '%s/%s' "$PWD" "$1" ;;
    esac
}

uint_setting() { # NAME DEFAULT MIN MAX: prints the value of $NAME or dies
    local v=${!1:-$2}
    case $v in
    '' | *[!0-9]*) warn "$1=$v is not a number"; exit 2 ;;
    esac
    if [ "${#v}" -gt 12 ] || [ "$v" -lt "$3" ] || [ "$v" -gt "$4" ]; then
        warn "$1=$v is out of range ($3..$4)"
        exit 2
    fi
    printf '%s' "$((10#$v))"
}

config_only=0
case ${1-} in
'') ;;
--config-only) config_only=1 ;;
*) warn "usage: scripts/run.sh [--config-only]"; exit 2 ;;
esac

if [ -n "${REFGATE_RUN_DIR:-}" ]; then
    RUN=$(abspath "$REFGATE_RUN_DIR")
else
    RUN=$root/.run
fi
workers=$(uint_setting REFGATE_WORKERS 2 1 64)
http_port=$(uint_setting REFGATE_HTTP_PORT 8080 1 65535)
fcgi_base=$(uint_setting REFGATE_FCGI_BASE_PORT 9100 1 $((65535 - workers)))
ws_base=$(uint_setting REFGATE_WS_BASE_PORT 9200 1 $((65535 - workers)))
redis_port=$(uint_setting REFGATE_REDIS_PORT 6390 1 65535)
redis_mode=${REFGATE_REDIS_MODE:-single}
case $redis_mode in
single) redis_ports=$redis_port ;;
cluster)
    if [ "$redis_port" -gt $((65535 - 10002)) ]; then
        warn "REFGATE_REDIS_PORT=$redis_port leaves no room for a cluster's ports (+2, and +10000 each)"
        exit 2
    fi
    redis_ports="$redis_port $((redis_port + 1)) $((redis_port + 2))"
    redis_ports="$redis_ports $((redis_port + 10000)) $((redis_port + 10001)) $((redis_port + 10002))"
    ;;
*) warn "REFGATE_REDIS_MODE=$redis_mode: single or cluster"; exit 2 ;;
esac
max_body=$(uint_setting REFGATE_MAX_BODY_BYTES 1048576 1 2147483647)
stop_timeout=$(uint_setting REFGATE_STOP_TIMEOUT_S 30 1 3600)
start_timeout=$(uint_setting REFGATE_START_TIMEOUT_S 60 1 3600)
server=$(abspath "${REFGATE_SERVER_BIN:-$root/build/refgate-server}")
cli=$(abspath "${REFGATE_CLI_BIN:-$root/build/refgate-cli}")
# nginx and the workers must agree on the limit, whatever the default is.
export REFGATE_MAX_BODY_BYTES=$max_body

# No two services on one port.
ports="$http_port"
[ -n "${REFGATE_REDIS_URL:-}" ] || ports="$ports $redis_ports"
for ((i = 1; i <= workers; i++)); do
    ports="$ports $((fcgi_base + i)) $((ws_base + i))"
done
# shellcheck disable=SC2086 # one port a word
dup=$(printf '%s\n' $ports | sort | uniq -d | head -n 1)
if [ -n "$dup" ]; then
    warn "port $dup would be used twice: check REFGATE_HTTP_PORT, REFGATE_REDIS_PORT,"
    warn "REFGATE_FCGI_BASE_PORT and REFGATE_WS_BASE_PORT against REFGATE_WORKERS=$workers"
    exit 2
fi

NGX=$RUN/nginx
LOGS=$RUN/logs
mkdir -p "$RUN" "$LOGS" "$NGX"
# nginx's worker processes run as nobody when the master is root: they must
# be able to enter these to reach the temp and error-body files.
chmod 755 "$RUN" "$NGX"

rotate() { # keeps one previous generation of a log
    if [ -e "$1" ]; then mv -f "$1" "$1.1"; fi
}

render_nginx() {
    sh "$root/scripts/nginx-conf.sh" --workers "$workers" --listen "127.0.0.1:$http_port" \
        --fcgi-base "$fcgi_base" --ws-base "$ws_base" --max-body "$max_body" "$NGX" || return 1
    local out
    if ! out=$(nginx -t -q -p "$NGX/" -c "$NGX/nginx.conf" -e "$NGX/error.log" 2>&1); then
        warn "nginx -t rejected $NGX/nginx.conf:"
        printf '%s\n' "$out" >&3
        return 1
    fi
    # shellcheck disable=SC2016 # $1 expands in the inner sh
    if [ "$(id -u)" -eq 0 ] && command -v runuser >/dev/null &&
        ! runuser -u nobody -- sh -c 'test -r "$1/errors/not_found.json" && test -w "$1/body"' \
            sh "$NGX" 2>/dev/null; then
        warn "nginx's worker processes (user nobody) cannot use $NGX: a directory above it"
        warn "is closed to other users. Set REFGATE_RUN_DIR to a directory they can enter"
        warn "(for example /tmp/refgate-run)."
        return 1
    fi
}

if [ "$config_only" -eq 1 ]; then
    render_nginx || exit 1
    say "nginx configuration: $NGX/nginx.conf (nginx -t: ok)"
    exit 0
fi

for b in "$server" "$cli"; do
    if [ ! -x "$b" ]; then
        warn "$b is missing: build it first (make run builds it)"
        exit 1
    fi
done

# ---- what this script started -------------------------------------------------------
# Parallel arrays, one entry per service in start order: its name (redis, w1,
# nginx), PID, pid file and log.
names=()
pids=()
pidfiles=()
logs=()

# Is PID running? A zombie is not: our children stay zombies until this
# shell reaps them. (No subshells below for the same reason: a subshell
# cannot reap this shell's children.)
alive() {
    local stat
    read -r stat <"/proc/$1/stat" 2>/dev/null || return 1
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
}

record() { # NAME PID PIDFILE LOG
    names+=("$1")
    pids+=("$2")
    pidfiles+=("$3")
    logs+=("$4")
    printf '%s\n' "$2" >"$3"
}

show_log() { # LOG: its last lines, indented, on stderr
    if [ -s "$1" ]; then
        warn "last lines of $1:"
        tail -n 20 "$1" | sed 's/^/    /' >&3 2>/dev/null || true
    fi
}

left=""
wait_gone() { # TIMEOUT_S PID...: polls until all are gone; $left: those still there
    local deadline=$((SECONDS + $1)) p
    shift
    while :; do
        left=""
        for p in "$@"; do
            if alive "$p"; then left="$left $p"; fi
        done
        left=${left# }
        if [ -z "$left" ] || [ "$SECONDS" -ge "$deadline" ]; then break; fi
        sleep 0.1
    done
}

# stop_group SIGNAL TIMEOUT_S PATTERN: sends SIGNAL to every live service whose
# name matches PATTERN, all at once, waits up to TIMEOUT_S for them, then
# SIGKILLs those left. Only PIDs this script started.
stop_group() {
    local sig=$1 timeout=$2 pattern=$3 i p sent=()
    for i in "${!names[@]}"; do
        # shellcheck disable=SC2254
        case ${names[$i]} in
        $pattern)
            if alive "${pids[$i]}"; then
                kill "-$sig" "${pids[$i]}" 2>/dev/null || true
                sent+=("${pids[$i]}")
            fi
            ;;
        esac
    done
    [ "${#sent[@]}" -gt 0 ] || return 0
    wait_gone "$timeout" "${sent[@]}"
    [ -n "$left" ] || return 0
    for p in $left; do
        for i in "${!names[@]}"; do
            [ "${pids[$i]}" != "$p" ] || warn "${names[$i]} (PID $p) did not stop within ${timeout}s: SIGKILL"
        done
        kill -KILL "$p" 2>/dev/null || true
    done
    # shellcheck disable=SC2086
    wait_gone 5 $left
    [ -z "$left" ] || warn "still running after SIGKILL: PIDs $left"
}

stopping=0
pause_pid="" # the pause before a worker's restart, if one is running
stop_all() {
    [ "$stopping" -eq 0 ] || return 0
    stopping=1
    [ -z "$pause_pid" ] || kill "$pause_pid" 2>/dev/null || true
    # Nothing may cut the stopping short: not a failed command, not a second
    # Ctrl-C, not a terminal or pipe that went away (SIGHUP, SIGPIPE).
    set +e
    trap '' INT TERM HUP PIPE
    [ "${#names[@]}" -gt 0 ] || return 0
    say "stopping nginx, then the workers (they park their sessions), then Redis"
    # nginx finishes in-flight requests (at most worker_shutdown_timeout, 10 s).
    {
        stop_group QUIT 15 nginx
        stop_group TERM "$stop_timeout" 'w[0-9]*'
        stop_group TERM 30 'redis*'
    } 2>/dev/null
    rm -f "${pidfiles[@]}"
}

on_signal() {
    # First of all: a write to a closed pipe must not call this again.
    trap '' PIPE
    set +e
    echo 2>/dev/null
    stop_all
    say "stopped"
    exit 0
}

fail() { # MESSAGE [LOG]: say why, show the log, stop what runs, exit 1
    set +e
    warn "$1"
    [ -z "${2-}" ] || show_log "$2"
    stop_all
    exit 1
}

dead=""
find_dead() { # $dead: the index of a service that is gone, or ""
    local i
    dead=""
    for i in "${!names[@]}"; do
        [ "${pids[$i]}" != 0 ] || continue # a worker given up on
        if ! alive "${pids[$i]}"; then
            dead=$i
            return 0
        fi
    done
}

desc=""
exit_desc() { # INDEX [STATUS]: $desc, e.g. "w2 (PID 123) exited with status 1"
    local i=$1 st=${2-}
    if [ -z "$st" ]; then
        # Reaps it if need be; bash also keeps the status of a child it
        # reaped already. 127: it does not know.
        if wait "${pids[$i]}" 2>/dev/null; then st=0; else st=$?; fi
    fi
    case $st in
    127) desc="${names[$i]} (PID ${pids[$i]}) exited" ;;
    129 | 1[3-9][0-9] | 2[0-9][0-9])
        desc="${names[$i]} (PID ${pids[$i]}) was killed by signal $((st - 128))" ;;
    *) desc="${names[$i]} (PID ${pids[$i]}) exited with status $st" ;;
    esac
}

check_alive() { # during start-up: a service that died fails the start
    find_dead
    [ -n "$dead" ] || return 0
    exit_desc "$dead"
    fail "$desc during start-up" "${logs[$dead]}"
}

trap on_signal INT TERM HUP PIPE
# Whatever ends this script (set -e included), nothing it started outlives it.
trap stop_all EXIT

# ---- leftovers of an earlier run ------------------------------------------------------
for f in "$RUN"/*.pid; do
    [ -e "$f" ] || continue
    p=$(cat "$f" 2>/dev/null || true)
    case $p in '' | *[!0-9]*) rm -f "$f"; continue ;; esac
    cmd=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null || true)
    case $cmd in
    *redis-server* | *nginx*"$NGX"* | *"$(basename "$server")"*)
        warn "$(basename "$f" .pid) of an earlier run is still running (PID $p: $cmd)."
        warn "Stop that run (Ctrl-C in its terminal) or end its processes by PID, then start again."
        exit 1
        ;;
    esac
    rm -f "$f"
done

listening() { # PORT: is anything listening on it (IPv4 or IPv6, any address)?
    local hex
    hex=$(printf '%04X' "$1")
    grep -Eq "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:0000 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

for p in $ports; do
    if listening "$p"; then
        if [ "$p" = "$http_port" ]; then
            what="nginx's port (REFGATE_HTTP_PORT)"
        elif [[ " $redis_ports " == *" $p "* ]]; then
            what="Redis's port (REFGATE_REDIS_PORT, or set REFGATE_REDIS_URL to use that Redis)"
        else
            what="a worker's port (REFGATE_FCGI_BASE_PORT, REFGATE_WS_BASE_PORT)"
        fi
        warn "port $p is in use already: it is $what"
        exit 1
    fi
done

# One deadline for the whole start-up.
deadline=$((SECONDS + start_timeout))

# ---- the nginx configuration, checked before anything starts -------------------------
rotate "$NGX/error.log"
rotate "$NGX/access.log"
render_nginx || exit 1
say "starting Redis, $workers workers and nginx on 127.0.0.1:$http_port (logs in $LOGS)"

# ---- Redis --------------------------------------------------------------------------
if [ -n "${REFGATE_REDIS_URL:-}" ]; then
    redis_desc="$REFGATE_REDIS_URL (not started here)"
    redis_wait=$((SECONDS + 10))
    # A cluster's or the sentinels' first node answers for them all here.
    ping_url=$REFGATE_REDIS_URL
    case $ping_url in
    redis+cluster://* | redis+sentinel://*)
        rest=${ping_url#*://}
        pass=""
        case $rest in *@*) pass=${rest%%@*}; pass=":${pass#*:}@"; rest=${rest#*@} ;; esac
        rest=${rest%%,*}
        rest=${rest%%/*}
        case $ping_url in redis+sentinel://*) pass="" ;; esac
        ping_url="redis://$pass$rest"
        ;;
    esac
    until [ "$(redis-cli --no-auth-warning -u "$ping_url" PING 2>/dev/null)" = PONG ]; do
        [ "$SECONDS" -lt $((deadline < redis_wait ? deadline : redis_wait)) ] ||
            fail "the Redis at REFGATE_REDIS_URL does not answer PING"
        sleep 0.5
    done
elif [ "$redis_mode" = cluster ]; then
    # Three masters without replicas: enough to see sessions spread over
    # slots and nodes. Their nodes.conf keeps the cluster across runs.
    cluster_url="redis+cluster://"
    for i in 0 1 2; do
        p=$((redis_port + i))
        mkdir -p "$RUN/redis-cluster/n$i"
        rotate "$LOGS/redis-n$i.log"
        # shellcheck disable=SC2094 # both append; redis writes its log itself
        setsid redis-server --bind 127.0.0.1 --port "$p" --protected-mode yes \
            --dir "$RUN/redis-cluster/n$i" --appendonly yes --save "" --daemonize no \
            --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
            --logfile "$LOGS/redis-n$i.log" </dev/null >>"$LOGS/redis-n$i.log" 2>&1 3>&- &
        record "redis-n$i" $! "$RUN/redis-n$i.pid" "$LOGS/redis-n$i.log"
        [ "$i" -eq 0 ] || cluster_url="$cluster_url,"
        cluster_url="${cluster_url}127.0.0.1:$p"
    done
    for i in 0 1 2; do
        until [ "$(redis-cli -h 127.0.0.1 -p $((redis_port + i)) PING 2>/dev/null)" = PONG ]; do
            check_alive
            [ "$SECONDS" -lt "$deadline" ] ||
                fail "redis-server (cluster node $i) did not answer PING" "$LOGS/redis-n$i.log"
            sleep 0.1
        done
    done
    if redis-cli -h 127.0.0.1 -p "$redis_port" CLUSTER INFO 2>/dev/null |
        grep -q '^cluster_slots_assigned:0'; then
        redis-cli --cluster create "127.0.0.1:$redis_port" "127.0.0.1:$((redis_port + 1))" \
            "127.0.0.1:$((redis_port + 2))" --cluster-yes >>"$LOGS/redis-n0.log" 2>&1 ||
            fail "redis-cli --cluster create failed" "$LOGS/redis-n0.log"
    fi
    for i in 0 1 2; do
        until redis-cli -h 127.0.0.1 -p $((redis_port + i)) CLUSTER INFO 2>/dev/null |
            grep -q '^cluster_state:ok'; do
            check_alive
            [ "$SECONDS" -lt "$deadline" ] ||
                fail "the Redis Cluster did not come up" "$LOGS/redis-n$i.log"
            sleep 0.2
        done
    done
    export REFGATE_REDIS_URL=$cluster_url
    redis_desc="$REFGATE_REDIS_URL (a cluster of three; data in $RUN/redis-cluster)"
else
    mkdir -p "$RUN/redis"
    rotate "$LOGS/redis.log"
    # shellcheck disable=SC2094 # both append; redis writes its log itself
    setsid redis-server --bind 127.0.0.1 --port "$redis_port" --protected-mode yes \
        --dir "$RUN/redis" --appendonly yes --save "" --daemonize no \
        --logfile "$LOGS/redis.log" </dev/null >>"$LOGS/redis.log" 2>&1 3>&- &
    record redis $! "$RUN/redis.pid" "$LOGS/redis.log"
    export REFGATE_REDIS_URL=redis://127.0.0.1:$redis_port
    redis_desc="$REFGATE_REDIS_URL (data in $RUN/redis)"
    until [ "$(redis-cli -h 127.0.0.1 -p "$redis_port" PING 2>/dev/null)" = PONG ]; do
        check_alive
        [ "$SECONDS" -lt "$deadline" ] || fail "redis-server did not answer PING" "$LOGS/redis.log"
        sleep 0.1
    done
fi

# ---- workers --------------------------------------------------------------------------
start_worker() { # I: starts worker wI in the background; its PID in $!
    local id=w$1
    # REFGATE_WORKER_INDEX/REFGATE_WORKERS: the worker's place behind nginx's
    # hash, so the ids of the sessions it creates hash back to it.
    REFGATE_WORKER_ID=$id REFGATE_WORKER_INDEX=$1 REFGATE_WORKERS=$workers \
        REFGATE_FCGI_LISTEN=127.0.0.1:$((fcgi_base + $1)) \
        REFGATE_WS_LISTEN=127.0.0.1:$((ws_base + $1)) \
        REFGATE_RUN_DIR=$RUN/worker-$id \
        setsid "$server" </dev/null >>"$LOGS/worker-$id.log" 2>&1 3>&- &
}
for ((i = 1; i <= workers; i++)); do
    id=w$i
    mkdir -p "$RUN/worker-$id"
    rotate "$LOGS/worker-$id.log"
    start_worker "$i"
    record "$id" $! "$RUN/worker-$id.pid" "$LOGS/worker-$id.log"
done

# Every worker listens on both of its ports before nginx sends it anything.
for ((i = 1; i <= workers; i++)); do
    until listening $((fcgi_base + i)) && listening $((ws_base + i)); do
        check_alive
        [ "$SECONDS" -lt "$deadline" ] ||
            fail "worker w$i did not listen on ports $((fcgi_base + i)) and $((ws_base + i)) in time" \
                "$LOGS/worker-w$i.log"
        sleep 0.2
    done
done

# ---- nginx ------------------------------------------------------------------------------
# shellcheck disable=SC2094 # -e and the redirect both append to one file
setsid nginx -p "$NGX/" -c "$NGX/nginx.conf" -e "$NGX/error.log" \
    </dev/null >>"$NGX/error.log" 2>&1 3>&- &
record nginx $! "$RUN/nginx.pid" "$NGX/error.log"

http_status() { # PATH: the status of GET PATH through nginx, 000 when none
    local code=""
    if command -v curl >/dev/null; then
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 \
            "http://127.0.0.1:$http_port$1" 2>/dev/null) || true
    else
        # shellcheck disable=SC2016
        code=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
            printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" "$1" >&3
            read -r _ code _ <&3 && printf "%s" "$code"' "$http_port" "$1" 2>/dev/null) || true
    fi
    printf '%s' "${code:-000}"
}

until [ "$(http_status /healthz)" = 200 ]; do
    check_alive
    if [ "$SECONDS" -ge "$deadline" ]; then
        warn "GET /healthz through nginx did not answer 200 within ${start_timeout}s (last: $(http_status /healthz))"
        for ((i = 1; i <= workers; i++)); do show_log "$LOGS/worker-w$i.log"; done
        fail "giving up" "$NGX/error.log"
    fi
    sleep 0.5
done

# ---- the development tenant -----------------------------------------------------------
# `dev` may open loopback and private addresses (--allow-private): it is for
# trying refgate against pages on this machine. On a Redis that kept its data
# from an earlier run it exists already: then it gets a new key.
cli_log=$LOGS/cli.log
rotate "$cli_log"
if key=$("$cli" admin tenant create dev --allow-private 2>>"$cli_log" 3>&-); then
    tenant_note="created the development tenant dev"
elif key=$("$cli" admin key create dev 2>>"$cli_log" 3>&-); then
    tenant_note="the development tenant dev exists (Redis kept it): made a new key for it"
else
    fail "refgate-cli could not create the tenant dev nor a key for it" "$cli_log"
fi
key=$(printf '%s' "$key" | tr -d '\r' | sed '/^[[:space:]]*$/d' | tail -n 1)
case $key in
'' | *[[:space:]]*) fail "refgate-cli printed no usable key" "$cli_log" ;;
esac
(
    umask 077
    printf '%s\n' "$key" >"$RUN/dev-key.tmp"
)
chmod 600 "$RUN/dev-key.tmp"
mv -f "$RUN/dev-key.tmp" "$RUN/dev-key"

cli_show=$cli
case $cli in "$root"/*) cli_show=${cli#"$root"/} ;; esac
url_line=""
if [ "$http_port" != 8080 ]; then
    url_line="    export REFGATE_URL=http://127.0.0.1:$http_port
"
fi
cat <<EOT

refgate is up: http://127.0.0.1:$http_port (nginx) -> $workers workers -> Redis $redis_desc
$tenant_note; it may open loopback and private addresses, because it is for local use.
API key (also in $RUN/dev-key):

    $key

Try it:

${url_line}    export REFGATE_KEY=\$(cat $RUN/dev-key)
    $cli_show session create --url https://example.com
    $cli_show -s <sid> observe

Logs: $LOGS/ (worker-w1.log .. worker-w$workers.log, redis.log or redis-n0..2.log, cli.log)
      $NGX/access.log, $NGX/error.log
Ctrl-C stops everything.
EOT

# ---- supervision --------------------------------------------------------------------
# A worker that exits is started again after a pause that doubles with each
# exit (1 s, 2 s, 4 s ... at most 30 s); its sessions are restorable by any
# worker meanwhile, and nginx sends its share to the others. A worker that
# exits RESTART_MAX times within RESTART_WINDOW_S is left down, and said so:
# the others go on serving. nginx and Redis are what everything stands on:
# if one of them exits, the rest are stopped and this script exits 1.
RESTART_MAX=5
RESTART_WINDOW_S=60
declare -A exits_at=() # index -> the SECONDS of its recent exits, space-separated
watched() { # the PIDs wait -n watches: every service not given up on
    watch=()
    local j
    for j in "${!pids[@]}"; do
        [ "${pids[$j]}" = 0 ] || watch+=("${pids[$j]}")
    done
}
restart_worker() { # INDEX: after a worker's exit, start it again or give up on it
    local i=$1 recent="" t n delay
    for t in ${exits_at[$i]:-}; do
        [ $((SECONDS - t)) -ge "$RESTART_WINDOW_S" ] || recent="$recent $t"
    done
    recent="$recent $SECONDS"
    exits_at[$i]=$recent
    n=$(wc -w <<<"$recent")
    if [ "$n" -ge "$RESTART_MAX" ]; then
        warn "${names[$i]} exited $n times within ${RESTART_WINDOW_S}s: not starting it again;" \
            "the other workers go on serving (see ${logs[$i]})"
        pids[i]=0
        rm -f "${pidfiles[$i]}"
        return 0
    fi
    delay=$((1 << (n - 1)))
    [ "$delay" -le 30 ] || delay=30
    warn "starting ${names[$i]} again in ${delay}s (exit $n within ${RESTART_WINDOW_S}s)"
    # In the background, so that a signal's trap runs at once (stop_all ends it).
    sleep "$delay" 3>&- &
    pause_pid=$!
    wait "$pause_pid" 2>/dev/null || true
    pause_pid=""
    [ "$stopping" -eq 0 ] || return 0
    start_worker "${names[$i]#w}"
    pids[i]=$!
    printf '%s\n' "$!" >"${pidfiles[$i]}"
    say "${names[$i]} is running again (PID $!)"
}

# wait -n returns when one of them exits, or at once when a trapped signal
# arrives (the trap then stops everything and exits 0).
while :; do
    watched
    if [ "${#watch[@]}" -eq 0 ]; then
        sleep 1
        continue
    fi
    gone=""
    if wait -n -p gone "${watch[@]}" 2>/dev/null; then st=0; else st=$?; fi
    i=""
    if [ -n "$gone" ]; then
        for j in "${!pids[@]}"; do [ "${pids[$j]}" != "$gone" ] || i=$j; done
    else
        st=""
        find_dead
        i=$dead
    fi
    if [ -n "$i" ]; then
        exit_desc "$i" "$st"
        case ${names[$i]} in
        w[0-9]*)
            warn "$desc"
            show_log "${logs[$i]}"
            restart_worker "$i"
            continue
            ;;
        esac
        warn "$desc unexpectedly; stopping the rest"
        show_log "${logs[$i]}"
        stop_all
        exit 1
    fi
    sleep 0.2
done
