/*
 * metrics.c - Prometheus text for one worker: commands by op and code,
 * latency histograms by op, HTTP responses by class, sessions, the pool,
 * Redis errors, egress, and the worker's memory. Counters live in struct gw
 * under its mutex. Also the JSON log line of a request (HTTP and WebSocket).
 */
#define _GNU_SOURCE
#include "gateway/gw_int.h"

#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const int gw_buckets_ms[GW_BUCKETS] = {1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000,
                                       10000, 30000};

void gw_metrics_count(gw *g, int op, int rc, double ms)
{
    if (op < 0 || op >= WIRE_OP_COUNT)
        return;
    int code = rc < 0 && -rc < GW_CODES ? -rc : 0;
    int b = 0;
    while (b < GW_BUCKETS && ms > gw_buckets_ms[b])
        b++;
    pthread_mutex_lock(&g->mu);
    g->m.commands[op][code]++;
    g->m.latency[op][b]++;
    g->m.latency_sum[op] += ms;
    if (rc == RG_EUNAVAIL)
        g->m.redis_errors++;
    pthread_mutex_unlock(&g->mu);
}

static void ops_text(const gw_metrics *m, rg_buf *out)
{
    rg_buf_puts(out, "# HELP refgate_commands_total Commands by op and result code.\n"
                     "# TYPE refgate_commands_total counter\n");
    for (int op = 0; wire_op_name(op); op++)
        for (int code = 0; code < GW_CODES; code++)
            if (m->commands[op][code])
                rg_buf_printf(out, "refgate_commands_total{op=\"%s\",code=\"%s\"} %llu\n",
                              wire_op_name(op), code ? rg_err_code(-code) : "ok",
                              (unsigned long long)m->commands[op][code]);
    rg_buf_puts(out, "# HELP refgate_command_duration_ms Time spent in the gateway per command.\n"
                     "# TYPE refgate_command_duration_ms histogram\n");
    for (int op = 0; wire_op_name(op); op++) {
        uint64_t total = 0;
        for (int b = 0; b <= GW_BUCKETS; b++)
            total += m->latency[op][b];
        if (!total)
            continue;
        uint64_t cum = 0;
        for (int b = 0; b < GW_BUCKETS; b++) {
            cum += m->latency[op][b];
            rg_buf_printf(out, "refgate_command_duration_ms_bucket{op=\"%s\",le=\"%d\"} %llu\n",
                          wire_op_name(op), gw_buckets_ms[b], (unsigned long long)cum);
        }
        rg_buf_printf(out,
                      "refgate_command_duration_ms_bucket{op=\"%s\",le=\"+Inf\"} %llu\n"
                      "refgate_command_duration_ms_sum{op=\"%s\"} %.3f\n"
                      "refgate_command_duration_ms_count{op=\"%s\"} %llu\n",
                      wire_op_name(op), (unsigned long long)total, wire_op_name(op),
                      m->latency_sum[op], wire_op_name(op), (unsigned long long)total);
    }
}

/*
 * The worker's memory: its resident set (/proc/self/statm), and what glibc's
 * allocator has handed out and holds free (mallinfo2, which walks every
 * arena under its lock: fine for a scrape). In use flat while the resident
 * set climbs is fragmentation; in use climbing is memory kept.
 */
static void memory_text(rg_buf *out)
{
    long size, pages = -1;
    FILE *f = fopen("/proc/self/statm", "re");
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &pages) != 2)
            pages = -1;
        fclose(f);
    }
    if (pages >= 0)
        rg_buf_printf(out,
                      "# TYPE process_resident_memory_bytes gauge\n"
                      "process_resident_memory_bytes %lld\n",
                      (long long)pages * sysconf(_SC_PAGESIZE));
    struct mallinfo2 mi = mallinfo2();
    rg_buf_printf(out,
                  "# HELP refgate_heap_in_use_bytes Bytes the allocator has handed out.\n"
                  "# TYPE refgate_heap_in_use_bytes gauge\nrefgate_heap_in_use_bytes %zu\n"
                  "# HELP refgate_heap_free_bytes Free bytes the allocator keeps in its arenas "
                  "(resident or not).\n"
                  "# TYPE refgate_heap_free_bytes gauge\nrefgate_heap_free_bytes %zu\n",
                  mi.uordblks + mi.hblkhd, mi.fordblks);
}

void gw_metrics_text(gw *g, rg_buf *out)
{
    gw_metrics m;
    pthread_mutex_lock(&g->mu);
    m = g->m;
    pthread_mutex_unlock(&g->mu);
    /* which worker this is: /metrics through nginx answers from any one of them */
    rg_buf_puts(out, "# HELP refgate_worker_info The worker that answered (REFGATE_WORKER_ID).\n"
                     "# TYPE refgate_worker_info gauge\n");
    rg_buf_printf(out, "refgate_worker_info{worker=\"%s\"} 1\n", g->worker);
    ops_text(&m, out);
    rg_buf_puts(out, "# TYPE refgate_http_responses_total counter\n");
    for (int c = 1; c <= 5; c++)
        rg_buf_printf(out, "refgate_http_responses_total{class=\"%dxx\"} %llu\n", c,
                      (unsigned long long)m.http[c]);
    sess_stats ss;
    sess_get_stats(g->sessions, &ss);
    pool_stats ps;
    pool_get_stats(g->pool, &ps);
    rg_buf_printf(out,
                  "# TYPE refgate_sessions_live gauge\nrefgate_sessions_live %d\n"
                  "# TYPE refgate_sessions_frozen gauge\nrefgate_sessions_frozen %d\n"
                  "# TYPE refgate_sessions_frozen_total counter\n"
                  "refgate_sessions_frozen_total %llu\n"
                  "# TYPE refgate_sessions_woken_total counter\n"
                  "refgate_sessions_woken_total %llu\n"
                  "# TYPE refgate_sessions_parked_total counter\n"
                  "refgate_sessions_parked_total %llu\n"
                  "# TYPE refgate_sessions_restored_total counter\n"
                  "refgate_sessions_restored_total %llu\n"
                  "# TYPE refgate_sessions_fenced_total counter\n"
                  "refgate_sessions_fenced_total %llu\n"
                  "# TYPE refgate_parks_unreplicated_total counter\n"
                  "refgate_parks_unreplicated_total %llu\n"
                  "# TYPE refgate_pool_browsers gauge\nrefgate_pool_browsers %d\n"
                  "# TYPE refgate_pool_browsers_ready gauge\nrefgate_pool_browsers_ready %d\n"
                  "# TYPE refgate_pool_contexts_in_use gauge\nrefgate_pool_contexts_in_use %d\n"
                  "# TYPE refgate_pool_queue_depth gauge\nrefgate_pool_queue_depth %d\n"
                  "# TYPE refgate_browser_restarts_total counter\n"
                  "refgate_browser_restarts_total %llu\n"
                  "# TYPE refgate_browser_pings_missed_total counter\n"
                  "refgate_browser_pings_missed_total %llu\n"
                  "# TYPE refgate_redis_errors_total counter\nrefgate_redis_errors_total %llu\n"
                  "# TYPE refgate_ws_connections_total counter\n"
                  "refgate_ws_connections_total %llu\n",
                  ss.live, ss.frozen, (unsigned long long)ss.freezes, (unsigned long long)ss.wakes,
                  (unsigned long long)ss.parked, (unsigned long long)ss.restored,
                  (unsigned long long)ss.fenced, (unsigned long long)ss.park_unreplicated,
                  ps.browsers, ps.browsers_ready, ps.contexts_in_use, ps.queue_depth,
                  (unsigned long long)ps.restarts, (unsigned long long)ps.pings_missed,
                  (unsigned long long)m.redis_errors,
                  (unsigned long long)m.ws_connections);
    rg_buf_printf(out,
                  "# HELP refgate_pool_contexts_max Contexts the ready browsers may hold "
                  "(REFGATE_CONTEXTS_PER_BROWSER each).\n"
                  "# TYPE refgate_pool_contexts_max gauge\nrefgate_pool_contexts_max %d\n"
                  "# HELP refgate_pool_memory_budget_bytes REFGATE_MEMORY_MAX (0: none).\n"
                  "# TYPE refgate_pool_memory_budget_bytes gauge\n"
                  "refgate_pool_memory_budget_bytes %lld\n"
                  "# HELP refgate_pool_memory_pss_bytes The browsers' PSS at the last sample.\n"
                  "# TYPE refgate_pool_memory_pss_bytes gauge\n"
                  "refgate_pool_memory_pss_bytes %lld\n"
                  "# HELP refgate_pool_memory_estimate_bytes The last sample corrected by the "
                  "contexts opened or closed since: what admission compares with the budget.\n"
                  "# TYPE refgate_pool_memory_estimate_bytes gauge\n"
                  "refgate_pool_memory_estimate_bytes %lld\n"
                  "# HELP refgate_pool_memory_per_context_bytes What one more context is taken "
                  "to cost.\n"
                  "# TYPE refgate_pool_memory_per_context_bytes gauge\n"
                  "refgate_pool_memory_per_context_bytes %lld\n"
                  "# HELP refgate_pool_memory_sample_age_seconds Age of the last sample "
                  "(-1: none yet).\n"
                  "# TYPE refgate_pool_memory_sample_age_seconds gauge\n"
                  "refgate_pool_memory_sample_age_seconds %.3f\n"
                  "# HELP refgate_pool_memory_sample_seconds The CPU time the last sample took.\n"
                  "# TYPE refgate_pool_memory_sample_seconds gauge\n"
                  "refgate_pool_memory_sample_seconds %.6f\n"
                  "# TYPE refgate_pool_memory_samples_total counter\n"
                  "refgate_pool_memory_samples_total %llu\n"
                  "# HELP refgate_pool_memory_walks_total Processes whose page tables the "
                  "samples read (smaps_rollup); the others kept their last figure.\n"
                  "# TYPE refgate_pool_memory_walks_total counter\n"
                  "refgate_pool_memory_walks_total %llu\n"
                  "# HELP refgate_pool_waits_total Lease requests that waited, by what was "
                  "full.\n"
                  "# TYPE refgate_pool_waits_total counter\n"
                  "refgate_pool_waits_total{reason=\"memory\"} %llu\n"
                  "refgate_pool_waits_total{reason=\"contexts\"} %llu\n"
                  "refgate_pool_waits_total{reason=\"queue\"} %llu\n"
                  "refgate_pool_waits_total{reason=\"browsers\"} %llu\n"
                  "# HELP refgate_sessions_evicted_total Sessions parked to make room, by what "
                  "they stood to lose.\n"
                  "# TYPE refgate_sessions_evicted_total counter\n"
                  "refgate_sessions_evicted_total{loses=\"nothing\"} %llu\n"
                  "refgate_sessions_evicted_total{loses=\"edits\"} %llu\n"
                  "refgate_sessions_evicted_total{loses=\"fresh\"} %llu\n"
                  "# HELP refgate_sessions_judged_total Pages judged for what a park would "
                  "lose.\n"
                  "# TYPE refgate_sessions_judged_total counter\n"
                  "refgate_sessions_judged_total %llu\n"
                  "# HELP refgate_sessions_room_waits_total Leases that found the worker full "
                  "and no session to park.\n"
                  "# TYPE refgate_sessions_room_waits_total counter\n"
                  "refgate_sessions_room_waits_total %llu\n",
                  ps.contexts_max, (long long)ps.memory_max, (long long)ps.memory_measured,
                  (long long)ps.memory_estimate, (long long)ps.memory_per_context,
                  ps.memory_age_ms < 0 ? -1.0 : ps.memory_age_ms / 1000.0,
                  ps.memory_sample_us / 1e6, (unsigned long long)ps.memory_samples,
                  (unsigned long long)ps.memory_walks,
                  (unsigned long long)ps.waits_memory, (unsigned long long)ps.waits_contexts,
                  (unsigned long long)ps.waits_queue, (unsigned long long)ps.waits_browsers,
                  (unsigned long long)ss.evicted_clean, (unsigned long long)ss.evicted_losing,
                  (unsigned long long)ss.evicted_fresh, (unsigned long long)ss.judged,
                  (unsigned long long)ss.room_waits);
    rg_buf_printf(out,
                  "# HELP refgate_pool_work Parks and restores running (busy) and waiting for "
                  "one of their browser's REFGATE_RESTORES_PER_BROWSER slots (queued).\n"
                  "# TYPE refgate_pool_work gauge\n"
                  "refgate_pool_work{state=\"busy\"} %d\n"
                  "refgate_pool_work{state=\"queued\"} %d\n"
                  "# HELP refgate_pool_work_waits_total Parks and restores that waited for a "
                  "slot, and that got none in time.\n"
                  "# TYPE refgate_pool_work_waits_total counter\n"
                  "refgate_pool_work_waits_total{result=\"waited\"} %llu\n"
                  "refgate_pool_work_waits_total{result=\"timeout\"} %llu\n"
                  "# HELP refgate_sessions_park_deferred_total Parks not done because their "
                  "browser's slots stayed busy.\n"
                  "# TYPE refgate_sessions_park_deferred_total counter\n"
                  "refgate_sessions_park_deferred_total %llu\n"
                  "# HELP refgate_pool_warm_contexts Contexts made ahead (REFGATE_WARM_CONTEXTS), "
                  "not yet leased.\n"
                  "# TYPE refgate_pool_warm_contexts gauge\n"
                  "refgate_pool_warm_contexts %d\n"
                  "# HELP refgate_pool_warm_total Contexts made ahead, and leased.\n"
                  "# TYPE refgate_pool_warm_total counter\n"
                  "refgate_pool_warm_total{event=\"made\"} %llu\n"
                  "refgate_pool_warm_total{event=\"leased\"} %llu\n",
                  ps.work_busy, ps.work_queued, (unsigned long long)ps.work_waits,
                  (unsigned long long)ps.work_timeouts, (unsigned long long)ss.park_deferred,
                  ps.warm_ready, (unsigned long long)ps.warm_made,
                  (unsigned long long)ps.warm_used);
    rg_buf_puts(out, "# HELP refgate_session_restore_seconds_total Restores' time, by phase "
                     "(docs/scaling.md).\n"
                     "# TYPE refgate_session_restore_seconds_total counter\n");
    for (int i = 0; i < SESS_RS_PHASES; i++)
        rg_buf_printf(out, "refgate_session_restore_seconds_total{phase=\"%s\"} %.3f\n",
                      sess_restore_phase(i), ss.restore_ms[i] / 1000.0);
    rg_buf_printf(out,
                  "# HELP refgate_view_frames_total Live view frames written to WebSocket clients, "
                  "and frames a newer one replaced before a slow client took them.\n"
                  "# TYPE refgate_view_frames_total counter\n"
                  "refgate_view_frames_total{result=\"sent\"} %llu\n"
                  "refgate_view_frames_total{result=\"dropped\"} %llu\n"
                  "# HELP refgate_view_viewers WebSocket connections subscribed to a screencast.\n"
                  "# TYPE refgate_view_viewers gauge\n"
                  "refgate_view_viewers %llu\n"
                  "# HELP refgate_view_frame_bytes Bytes of live view frames waiting to be "
                  "written (at most one frame per connection).\n"
                  "# TYPE refgate_view_frame_bytes gauge\n"
                  "refgate_view_frame_bytes %llu\n",
                  (unsigned long long)m.frames_sent, (unsigned long long)m.frames_dropped,
                  (unsigned long long)m.viewers, (unsigned long long)m.frame_bytes);
    egress_stats es;
    if (sess_egress_stats(g->sessions, &es))
        rg_buf_printf(out,
                      "# TYPE refgate_egress_connections gauge\n"
                      "refgate_egress_connections %d\n"
                      "# TYPE refgate_egress_connections_total counter\n"
                      "refgate_egress_connections_total{result=\"connected\"} %llu\n"
                      "refgate_egress_connections_total{result=\"refused\"} %llu\n"
                      "refgate_egress_connections_total{result=\"failed\"} %llu\n"
                      "refgate_egress_connections_total{result=\"over_limit\"} %llu\n"
                      "# TYPE refgate_egress_bytes_total counter\n"
                      "refgate_egress_bytes_total{direction=\"out\"} %llu\n"
                      "refgate_egress_bytes_total{direction=\"in\"} %llu\n",
                      es.conns, (unsigned long long)es.connected,
                      (unsigned long long)es.refused, (unsigned long long)es.failed,
                      (unsigned long long)es.over_limit, (unsigned long long)es.bytes_out,
                      (unsigned long long)es.bytes_in);
    memory_text(out);
}

void gw_log_request(gw *g, const char *rid, const char *tid, const char *sid, const char *op,
                    int status, const char *code, double ms)
{
    if (!rg_log_enabled(RG_LOG_INFO))
        return;
    rg_buf b;
    rg_buf_init(&b);
    rg_buf_printf(&b, "{\"ts\":%lld,\"worker\":", (long long)rg_wall_ms());
    rg_buf_json_str(&b, g->worker, strlen(g->worker));
    rg_buf_puts(&b, ",\"rid\":");
    rg_buf_json_str(&b, rid, strlen(rid));
    rg_buf_puts(&b, ",\"tenant\":");
    rg_buf_json_str(&b, tid, strlen(tid));
    rg_buf_puts(&b, ",\"session\":");
    rg_buf_json_str(&b, sid, strlen(sid));
    rg_buf_puts(&b, ",\"op\":");
    rg_buf_json_str(&b, op, strlen(op));
    rg_buf_printf(&b, ",\"status\":%d,\"code\":\"%s\",\"ms\":%.2f}\n", status, code, ms);
    if (!b.failed)
        fputs(b.data, stderr);
    rg_buf_destroy(&b);
}
