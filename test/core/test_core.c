/*
 * test_core.c - status strings, configuration parsing and precedence,
 * logging filters, the coarse clock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "config.h"
#include "log.h"
#include "test.h"

WF_TEST(core_status_names_and_strings, 10)
{
    ASSERT_EQ(WEFT_OK, 0);
    ASSERT_EQ(WEFT_INPROGRESS, 1);
    ASSERT_TRUE(strcmp(weft_status_name(WEFT_ERR_TIMEOUT), "ERR_TIMEOUT") == 0);
    ASSERT_TRUE(strcmp(weft_strerror(WEFT_OK), "success") == 0);
    ASSERT_TRUE(strcmp(weft_strerror((weft_status_t)-999), "unknown status") == 0);
    ASSERT_TRUE(strcmp(weft_status_name((weft_status_t)42), "UNKNOWN") == 0);
    /* Every listed status has a distinct non-empty name and text. */
    const int codes[] = {
#define CODE_(n, v, t) v,
        WEFT_STATUS_LIST(CODE_)
#undef CODE_
    };
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        ASSERT_TRUE(*weft_strerror((weft_status_t)codes[i]));
        for (size_t j = 0; j < i; j++)
            ASSERT_TRUE(strcmp(weft_status_name((weft_status_t)codes[i]),
                               weft_status_name((weft_status_t)codes[j])));
    }
    ASSERT_EQ(weft_get_version(), WEFT_VERSION_CODE);
}

WF_TEST(core_config_parsers, 10)
{
    uint64_t sz;
    int64_t ms;
    bool b;
    ASSERT_TRUE(wf_parse_size("64k", &sz) && sz == 65536);
    ASSERT_TRUE(wf_parse_size("2M", &sz) && sz == 2u << 20);
    ASSERT_TRUE(wf_parse_size("1g", &sz) && sz == 1u << 30);
    ASSERT_TRUE(wf_parse_size("100", &sz) && sz == 100);
    ASSERT_TRUE(!wf_parse_size("-1", &sz));
    ASSERT_TRUE(!wf_parse_size("12q", &sz));
    ASSERT_TRUE(!wf_parse_size("", &sz));
    ASSERT_TRUE(!wf_parse_size("99999999999999999999g", &sz));
    ASSERT_TRUE(wf_parse_duration_ms("5s", &ms) && ms == 5000);
    ASSERT_TRUE(wf_parse_duration_ms("250ms", &ms) && ms == 250);
    ASSERT_TRUE(wf_parse_duration_ms("300", &ms) && ms == 300000);
    ASSERT_TRUE(wf_parse_duration_ms("2m", &ms) && ms == 120000);
    ASSERT_TRUE(!wf_parse_duration_ms("soon", &ms));
    ASSERT_TRUE(wf_parse_bool("yes", &b) && b);
    ASSERT_TRUE(wf_parse_bool("0", &b) && !b);
    ASSERT_TRUE(!wf_parse_bool("maybe", &b));
}

WF_TEST(core_config_precedence, 10)
{
    wf_config_t cfg;
    setenv("WEFT_CHUNK_SIZE", "1m", 1);
    setenv("WEFT_TIMEOUT", "7s", 1);
    ASSERT_OK(wf_config_load(&cfg, "WEFT_CHUNK_SIZE=8k"));
    ASSERT_EQ(cfg.chunk_size, 8192);                /* override beats env */
    ASSERT_EQ(cfg.source[WF_PARAM_ID_chunk_size], WF_SOURCE_OVERRIDE);
    ASSERT_EQ(cfg.timeout_ms, 7000);                /* env beats default */
    ASSERT_EQ(cfg.source[WF_PARAM_ID_timeout_ms], WF_SOURCE_ENV);
    ASSERT_EQ(cfg.max_inflight, 8);                 /* default */
    /* A list value continues across commas until the next NAME=. */
    ASSERT_OK(wf_config_load(&cfg, "WEFT_ALGO=allreduce:rhd,broadcast:tree,"
                                   "WEFT_CHUNK_SIZE=4k"));
    ASSERT_TRUE(strcmp(cfg.algo, "allreduce:rhd,broadcast:tree") == 0);
    ASSERT_EQ(cfg.chunk_size, 4096);
    ASSERT_EQ(cfg.source[WF_PARAM_ID_max_inflight], WF_SOURCE_DEFAULT);
    ASSERT_OK(wf_config_set(&cfg, "WEFT_TIMEOUT", "1s", WF_SOURCE_API));
    ASSERT_EQ(cfg.timeout_ms, 1000);
}

WF_TEST(core_config_rejects_bad_values, 10)
{
    wf_config_t cfg;
    setenv("WEFT_CHUNK_SIZE", "lots", 1);
    ASSERT_STATUS(wf_config_load(&cfg, NULL), WEFT_ERR_INVALID_ARG);
    unsetenv("WEFT_CHUNK_SIZE");
    ASSERT_STATUS(wf_config_load(&cfg, "WEFT_NOPE=1"), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(wf_config_load(&cfg, "WEFT_TIMEOUT"), WEFT_ERR_INVALID_ARG);
    ASSERT_OK(wf_config_load(&cfg, ""));
}

static char captured[8192];
static void capture(void *ctx, weft_log_level_t level, const char *subsys,
                    const char *line)
{
    (void)ctx;
    (void)level;
    (void)subsys;
    strncat(captured, line, sizeof(captured) - strlen(captured) - 2);
    strcat(captured, "\n");
}

WF_TEST(core_config_unknown_env_suggests, 10)
{
    setenv("WEFT_CHUNK_SIZ", "4k", 1);
    ASSERT_OK(weft_set_logger(capture, NULL));
    wf_config_t cfg;
    ASSERT_OK(wf_config_load(&cfg, NULL));
    ASSERT_STR_CONTAINS(captured, "unknown environment variable WEFT_CHUNK_SIZ");
    ASSERT_STR_CONTAINS(captured, "did you mean WEFT_CHUNK_SIZE?");
}

WF_TEST(core_config_dump_lists_every_knob, 10)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ASSERT_OK(weft_config_dump(f));
    fclose(f);
    const char *names[] = {"WEFT_RANK", "WEFT_WORLD_SIZE", "WEFT_RENDEZVOUS",
                           "WEFT_JOB_ID", "WEFT_TIMEOUT", "WEFT_SOCKET_IFNAME",
                           "WEFT_PORT_RANGE", "WEFT_CHUNK_SIZE", "WEFT_LOG",
                           "WEFT_LOG_SUBSYS", "WEFT_LOG_FILE", "WEFT_ALGO",
                           "WEFT_TRANSPORT", "WEFT_TOKEN"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        ASSERT_STR_CONTAINS(buf, names[i]);
    ASSERT_STR_CONTAINS(buf, "(default)");
    free(buf);
}

WF_TEST(core_log_filters_and_prefix, 10)
{
    ASSERT_OK(weft_set_logger(capture, NULL));
    wf_log_reconfigure("info", "coll");
    wf_log_set_rank(3);
    WEFT_INFO(COLL, "visible %d", 42);
    WEFT_INFO(NET, "hidden by subsystem");
    WEFT_DEBUG(COLL, "hidden by level");
    ASSERT_STR_CONTAINS(captured, "[3] weft info coll: visible 42");
    ASSERT_TRUE(strstr(captured, "hidden") == NULL);
    /* host:pid:tid prefix */
    char prefix[300];
    snprintf(prefix, sizeof(prefix), ":%d:", (int)getpid());
    ASSERT_STR_CONTAINS(captured, prefix);
    ASSERT_EQ(wf_log_level_parse("trace"), WEFT_LOG_TRACE);
    ASSERT_EQ(wf_log_level_parse("loud"), -1);
}

/* The coarse clock is the precise one's timeline, at most a tick behind,
 * and the cheap deadline check answers as the precise one does; the
 * reference is clock_gettime(CLOCK_MONOTONIC) read around each read. */
WF_TEST(core_coarse_clock_follows_the_precise_one, 10)
{
    uint64_t tick = wf_coarse_tick_ms();
    ASSERT_TRUE(tick >= 1 && tick <= 1001);
    /* Never ahead of the precise clock; behind it by about a tick (more
     * only while a VM holds back the CPU that keeps time: 100 ms of
     * slack, as the check is for the timeline, not the lag). */
    for (int i = 0; i < 2000; i++) {
        uint64_t before = wf_time_ms();
        uint64_t coarse = wf_time_ms_coarse();
        uint64_t after = wf_time_ms();
        ASSERT_TRUE(coarse <= after);
        ASSERT_TRUE(before <= coarse + tick + 100);
        if (i % 100 == 0)
            usleep(300);
    }
    uint64_t now = wf_time_ms();
    ASSERT_TRUE(!wf_deadline_passed_cheap(0));
    ASSERT_TRUE(!wf_deadline_passed_cheap(now + 60000));
    /* Deadlines behind, at and a few ms ahead of now: never "passed"
     * before the precise clock reaches them, and "passed" soon after. */
    const uint64_t deadlines[] = {now - 1, now, wf_time_ms() + 3};
    for (size_t k = 0; k < sizeof(deadlines) / sizeof(deadlines[0]); k++) {
        uint64_t d = deadlines[k], give_up = wf_time_ms() + 1000;
        bool passed = false;
        while (!passed && wf_time_ms() < give_up) {
            passed = wf_deadline_passed_cheap(d);
            ASSERT_TRUE(!passed || wf_time_ms() >= d);
        }
        ASSERT_TRUE(passed);
    }
}
