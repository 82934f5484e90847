/* SPDX-License-Identifier: Apache-2.0 */
#include "core/stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macros.h"

/* Create latency buckets, seconds (Prometheus "le"). */
static const double buckets_s[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5};
#define N_BUCKETS ELEMENTSOF(buckets_s)

static struct {
        uint64_t creates_pool, creates_cold, create_errors, rejected;
        uint64_t bucket[N_BUCKETS]; /* non-cumulative; summed when rendered */
        uint64_t latency_us_sum, latency_count;
        uint64_t proxy_in, proxy_out;
        uint64_t http_4xx, http_5xx;
        uint64_t pauses, resumes, snapshots, ooms, disk_refused, egress_restarts, egress_restored;
        uint64_t conn[STATS_CONN_MAX_];
        unsigned conn_waiting, conn_active;
} st;

#define INC(f, n) __atomic_add_fetch(&st.f, (n), __ATOMIC_RELAXED)
#define GET(f)    __atomic_load_n(&st.f, __ATOMIC_RELAXED)

void stats_observe_create(int64_t us, bool pooled)
{
        if (pooled)
                INC(creates_pool, 1);
        else
                INC(creates_cold, 1);
        for (size_t i = 0; i < N_BUCKETS; i++)
                if ((double)us / 1e6 <= buckets_s[i]) {
                        INC(bucket[i], 1);
                        break;
                }
        INC(latency_us_sum, (uint64_t)(us > 0 ? us : 0));
        INC(latency_count, 1);
}

void stats_count_create_error(void)
{
        INC(create_errors, 1);
}
void stats_count_rejected(void)
{
        INC(rejected, 1);
}
void stats_count_proxy_bytes(uint64_t in, uint64_t out)
{
        if (in)
                INC(proxy_in, in);
        if (out)
                INC(proxy_out, out);
}
void stats_count_http_error(unsigned status)
{
        if (status >= 500)
                INC(http_5xx, 1);
        else if (status >= 400)
                INC(http_4xx, 1);
}
void stats_count_pause(void)
{
        INC(pauses, 1);
}
void stats_count_resume(void)
{
        INC(resumes, 1);
}
void stats_count_snapshot(void)
{
        INC(snapshots, 1);
}
void stats_count_oom(void)
{
        INC(ooms, 1);
}
void stats_count_disk_refused(void)
{
        INC(disk_refused, 1);
}
void stats_count_egress_restart(void)
{
        INC(egress_restarts, 1);
}
void stats_count_egress_restored(void)
{
        INC(egress_restored, 1);
}

void stats_count_conn(enum stats_conn e)
{
        if (e < STATS_CONN_MAX_)
                INC(conn[e], 1);
}
uint64_t stats_conn(enum stats_conn e)
{
        return e < STATS_CONN_MAX_ ? GET(conn[e]) : 0;
}
void stats_set_connections(unsigned waiting, unsigned active)
{
        __atomic_store_n(&st.conn_waiting, waiting, __ATOMIC_RELAXED);
        __atomic_store_n(&st.conn_active, active, __ATOMIC_RELAXED);
}

static void counter(FILE *f, const char *name, const char *help, const char *labels, uint64_t v,
                    bool head)
{
        if (head)
                fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
        fprintf(f, "%s%s %llu\n", name, labels, (unsigned long long)v);
}

static void render_sandboxes(FILE *f, const struct stats_gauges *g)
{
        fprintf(f, "# HELP sbx_sandboxes Sandboxes by state.\n# TYPE sbx_sandboxes gauge\n");
        fprintf(f, "sbx_sandboxes{state=\"running\"} %zu\n", g->running);
        fprintf(f, "sbx_sandboxes{state=\"paused\"} %zu\n", g->paused);
        fprintf(f, "sbx_sandboxes{state=\"pool\"} %zu\n", g->pool);
        fprintf(f, "sbx_sandboxes{state=\"starting\"} %zu\n", g->starting);
        fprintf(f, "# HELP sbx_state_disk_bytes The host's state disk: free, promised to sandbox "
                   "disks, used by them, kept in reserve.\n# TYPE sbx_state_disk_bytes gauge\n");
        fprintf(f, "sbx_state_disk_bytes{kind=\"free\"} %llu\n", (unsigned long long)g->disk_free);
        fprintf(f, "sbx_state_disk_bytes{kind=\"promised\"} %llu\n",
                (unsigned long long)g->disk_promised);
        fprintf(f, "sbx_state_disk_bytes{kind=\"used\"} %llu\n", (unsigned long long)g->disk_used);
        fprintf(f, "sbx_state_disk_bytes{kind=\"reserve\"} %llu\n",
                (unsigned long long)g->disk_reserve);
        if (!g->disk_backend)
                return;
        fprintf(f, "# HELP sbx_storage_backend What holds sandbox disks (1 for the one in use): "
                   "the btrfs pool, ext4 images, or tmpfs.\n# TYPE sbx_storage_backend gauge\n");
        static const char *const kinds[] = {"pool", "image", "tmpfs"};
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                fprintf(f, "sbx_storage_backend{kind=\"%s\"} %d\n", kinds[i],
                        strcmp(kinds[i], g->disk_backend) == 0);
        if (strcmp(g->disk_backend, "pool") != 0)
                return;
        fprintf(f, "# HELP sbx_storage_pool_bytes The storage pool: size, free, used; what the "
                   "sandboxes' disks reference and hold exclusively.\n"
                   "# TYPE sbx_storage_pool_bytes gauge\n");
        const struct {
                const char *kind;
                uint64_t v;
        } rows[] = {{"size", g->pool_size},           {"free", g->pool_free},
                    {"used", g->pool_used},           {"referenced", g->pool_referenced},
                    {"exclusive", g->pool_exclusive}, {"reserve", g->disk_reserve}};
        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                fprintf(f, "sbx_storage_pool_bytes{kind=\"%s\"} %llu\n", rows[i].kind,
                        (unsigned long long)rows[i].v);
}

static void render_connections(FILE *f)
{
        static const struct {
                const char *name, *labels;
                enum stats_conn e;
        } rows[] = {
            {"sbx_http_connections_accepted_total", "", STATS_CONN_ACCEPTED},
            {"sbx_http_connections_handed_total", "", STATS_CONN_HANDED},
            {"sbx_http_connections_refused_total", "{reason=\"framing\"}",
             STATS_CONN_REFUSED_FRAMING},
            {"sbx_http_connections_refused_total", "{reason=\"busy\"}", STATS_CONN_REFUSED_BUSY},
            {"sbx_http_connections_closed_total", "{reason=\"evicted\"}", STATS_CONN_EVICTED},
            {"sbx_http_connections_closed_total", "{reason=\"late_head\"}", STATS_CONN_LATE_HEAD},
            {"sbx_http_connections_closed_total", "{reason=\"idle\"}", STATS_CONN_CUT_IDLE},
            {"sbx_http_connections_closed_total", "{reason=\"slow_head\"}", STATS_CONN_CUT_HEAD},
            {"sbx_http_connections_closed_total", "{reason=\"slow_body\"}", STATS_CONN_CUT_BODY},
        };
        static const char *const help[] = {
            "Connections accepted.",
            "Connections handed to the HTTP server with a whole request head.",
            "Connections answered and closed by the front door (framing 400/431/501, busy 503).",
            "Connections closed by the front door's deadlines and bounds.",
        };
        fprintf(f, "# HELP sbx_http_connections Connections waiting for their request head, "
                   "and in a request (a thread each).\n# TYPE sbx_http_connections gauge\n");
        fprintf(f, "sbx_http_connections{state=\"waiting\"} %u\n",
                __atomic_load_n(&st.conn_waiting, __ATOMIC_RELAXED));
        fprintf(f, "sbx_http_connections{state=\"active\"} %u\n",
                __atomic_load_n(&st.conn_active, __ATOMIC_RELAXED));
        const char *last = "";
        size_t h = 0;
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                bool head = strcmp(rows[i].name, last) != 0;
                counter(f, rows[i].name, head ? help[h++] : "", rows[i].labels,
                        GET(conn[rows[i].e]), head);
                last = rows[i].name;
        }
}

static void render_histogram(FILE *f)
{
        fprintf(f, "# HELP sbx_create_duration_seconds Server-side create latency.\n"
                   "# TYPE sbx_create_duration_seconds histogram\n");
        uint64_t cum = 0;
        for (size_t i = 0; i < N_BUCKETS; i++) {
                cum += GET(bucket[i]);
                fprintf(f, "sbx_create_duration_seconds_bucket{le=\"%g\"} %llu\n", buckets_s[i],
                        (unsigned long long)cum);
        }
        fprintf(f, "sbx_create_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
                (unsigned long long)GET(latency_count));
        fprintf(f, "sbx_create_duration_seconds_sum %.6f\n", (double)GET(latency_us_sum) / 1e6);
        fprintf(f, "sbx_create_duration_seconds_count %llu\n",
                (unsigned long long)GET(latency_count));
}

int stats_render(const struct stats_gauges *g, char **ret, size_t *ret_len)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        render_sandboxes(f, g);
        counter(f, "sbx_creates_total", "Sandboxes created.", "{source=\"pool\"}",
                GET(creates_pool), true);
        counter(f, "sbx_creates_total", "", "{source=\"cold\"}", GET(creates_cold), false);
        counter(f, "sbx_create_errors_total", "Creates that failed.", "", GET(create_errors), true);
        counter(f, "sbx_rejected_total", "Creates refused with 429 (limits).", "", GET(rejected),
                true);
        render_histogram(f);
        counter(f, "sbx_proxy_bytes_total", "Bytes proxied to/from sandboxes.",
                "{direction=\"in\"}", GET(proxy_in), true);
        counter(f, "sbx_proxy_bytes_total", "", "{direction=\"out\"}", GET(proxy_out), false);
        counter(f, "sbx_http_errors_total", "Error responses.", "{class=\"4xx\"}", GET(http_4xx),
                true);
        counter(f, "sbx_http_errors_total", "", "{class=\"5xx\"}", GET(http_5xx), false);
        counter(f, "sbx_pauses_total", "Sandboxes paused.", "", GET(pauses), true);
        counter(f, "sbx_resumes_total", "Sandboxes resumed.", "", GET(resumes), true);
        counter(f, "sbx_snapshots_total", "Snapshots taken.", "", GET(snapshots), true);
        counter(f, "sbx_oom_kills_total", "OOM kills seen in sandboxes.", "", GET(ooms), true);
        counter(f, "sbx_disk_refused_total",
                "Sandbox disks refused (507) for want of space on the state disk.", "",
                GET(disk_refused), true);
        counter(f, "sbx_egress_restarts_total",
                "Times sbx-egress (the resolver and the proxies) died and was started again.", "",
                GET(egress_restarts), true);
        counter(f, "sbx_egress_rules_restored_total",
                "Times another program removed sbxd's nftables rules and sbxd put them back.", "",
                GET(egress_restored), true);
        render_connections(f);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
}
