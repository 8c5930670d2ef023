/*
 * test_store.c - store semantics (store.h), the same checks for each of the
 * three backends: mem://, file:// (a mkdtemp directory) and tcp (an
 * in-process weft_server_start on 127.0.0.1:0).
 *
 * Each check is a function over a fixture; STORE_TESTS(check) registers it
 * three times as rdv_mem_<check>, rdv_file_<check>, rdv_tcp_<check>.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "rdv/store.h"
#include "test.h"

typedef enum { KIND_MEM, KIND_FILE, KIND_TCP } kind_t;

typedef struct {
    kind_t kind;
    weft_server_t server;
    char dir[64];
    char uri[256];
    const char *job;
} fixture_t;

static void fixture_init(fixture_t *fx, kind_t kind)
{
    memset(fx, 0, sizeof(*fx));
    fx->kind = kind;
    fx->job = wf_test_unique("job");
    if (kind == KIND_MEM) {
        snprintf(fx->uri, sizeof(fx->uri), "mem://%s",
                 wf_test_unique("store"));
    } else if (kind == KIND_FILE) {
        strcpy(fx->dir, "/tmp/weft-rdv-test-XXXXXX");
        ASSERT_TRUE(mkdtemp(fx->dir) != NULL);
        snprintf(fx->uri, sizeof(fx->uri), "file://%s", fx->dir);
    } else {
        ASSERT_OK(weft_server_start("127.0.0.1:0", &fx->server));
        snprintf(fx->uri, sizeof(fx->uri), "%s",
                 weft_server_address(fx->server));
    }
}

static void fixture_fini(fixture_t *fx)
{
    char cmd[128];

    ASSERT_OK(weft_server_stop(fx->server));
    if (fx->dir[0]) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
        ASSERT_EQ(system(cmd), 0);
    }
}

static wf_store_t *open_job(const fixture_t *fx, const char *job)
{
    wf_store_t *s = NULL;

    ASSERT_OK(wf_store_open(fx->uri, job, NULL, 5000, &s));
    ASSERT_TRUE(s != NULL);
    return s;
}

static wf_store_t *open_store(const fixture_t *fx)
{
    return open_job(fx, fx->job);
}

static void expect_value(wf_store_t *s, const char *key, const char *want)
{
    char buf[256];
    size_t len = 0;

    ASSERT_OK(wf_store_get(s, key, buf, sizeof(buf), &len, 2000));
    ASSERT_EQ(len, strlen(want));
    ASSERT_TRUE(memcmp(buf, want, len) == 0);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- checks ------------------------------------------------------------ */

static void check_basic(fixture_t *fx)
{
    wf_store_t *s = open_store(fx);
    char buf[16], key[WF_STORE_KEY_MAX + 2];
    size_t len = 99;

    ASSERT_OK(wf_store_set(s, "a", "hello", 5));
    expect_value(s, "a", "hello");
    ASSERT_OK(wf_store_set(s, "a", "bye", 3));
    expect_value(s, "a", "bye");
    /* Keys with '/' and odd bytes (escaped by the file store). */
    ASSERT_OK(wf_store_set(s, "rank/0/addr", "x y", 3));
    ASSERT_OK(wf_store_set(s, "../%2F..", "z", 1));
    expect_value(s, "rank/0/addr", "x y");
    expect_value(s, "../%2F..", "z");
    /* Empty value. */
    ASSERT_OK(wf_store_set(s, "empty", "", 0));
    ASSERT_OK(wf_store_get(s, "empty", buf, sizeof(buf), &len, 0));
    ASSERT_EQ(len, 0);
    /* Too small a buffer, missing key, bad sizes. */
    ASSERT_STATUS(wf_store_get(s, "a", buf, 2, &len, 0),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(wf_store_get(s, "missing", buf, sizeof(buf), &len, 0),
                  WEFT_ERR_TIMEOUT);
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    ASSERT_STATUS(wf_store_set(s, key, "v", 1), WEFT_ERR_INVALID_ARG);
    key[WF_STORE_KEY_MAX] = '\0'; /* exactly the limit is fine */
    ASSERT_OK(wf_store_set(s, key, "v", 1));
    expect_value(s, key, "v");
    ASSERT_STATUS(wf_store_set(s, "", "v", 1), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(wf_store_set(s, "big", buf, WF_STORE_VALUE_MAX + 1),
                  WEFT_ERR_INVALID_ARG);
    wf_store_close(s);
    fixture_fini(fx);
}

/* The largest value, with every byte value, survives the round trip. */
static void check_binary(fixture_t *fx)
{
    wf_store_t *s = open_store(fx);
    uint8_t *in = malloc(WF_STORE_VALUE_MAX), *out = malloc(WF_STORE_VALUE_MAX);
    size_t len = 0;

    ASSERT_TRUE(in && out);
    for (size_t i = 0; i < WF_STORE_VALUE_MAX; i++)
        in[i] = (uint8_t)(i * 7 + i / 256);
    ASSERT_OK(wf_store_set(s, "blob", in, WF_STORE_VALUE_MAX));
    ASSERT_OK(wf_store_get(s, "blob", out, WF_STORE_VALUE_MAX, &len, 0));
    ASSERT_EQ(len, WF_STORE_VALUE_MAX);
    ASSERT_TRUE(memcmp(in, out, len) == 0);
    free(in);
    free(out);
    wf_store_close(s);
    fixture_fini(fx);
}

typedef struct {
    wf_store_t *store;
    const char *key;
    int delay_ms;
} setter_t;

static void *setter_main(void *arg)
{
    setter_t *st = arg;

    sleep_ms(st->delay_ms);
    ASSERT_OK(wf_store_set(st->store, st->key, "late", 4));
    return NULL;
}

/* A get waits for a key another thread sets later, through another handle
 * and through the same handle (the tcp store must not hold its only
 * connection while parked). */
static void check_get_wait(fixture_t *fx)
{
    wf_store_t *s = open_store(fx), *other = open_store(fx);
    pthread_t th;

    for (int same = 0; same < 2; same++) {
        const char *key = same ? "later-same" : "later-other";
        setter_t st = {same ? s : other, key, 200};
        uint64_t t0 = wf_time_ms();
        ASSERT_EQ(pthread_create(&th, NULL, setter_main, &st), 0);
        expect_value(s, key, "late");
        ASSERT_TRUE(wf_time_ms() - t0 >= 150);
        pthread_join(th, NULL);
    }
    wf_store_close(other);
    wf_store_close(s);
    fixture_fini(fx);
}

static void check_get_timeout(fixture_t *fx)
{
    wf_store_t *s = open_store(fx);
    char buf[8];
    size_t len;

    uint64_t t0 = wf_time_ms();
    ASSERT_STATUS(wf_store_get(s, "never", buf, sizeof(buf), &len, 200),
                  WEFT_ERR_TIMEOUT);
    uint64_t took = wf_time_ms() - t0;
    ASSERT_TRUE(took >= 190 && took < 1500);
    wf_store_close(s);
    fixture_fini(fx);
}

typedef struct {
    wf_store_t *store;
    int id;
    bool created;
    char seen[16];
} racer_t;

static void *racer_main(void *arg)
{
    racer_t *r = arg;
    char mine[16];
    size_t len = 0;

    snprintf(mine, sizeof(mine), "racer%d", r->id);
    ASSERT_OK(wf_store_set_once(r->store, "winner", mine, strlen(mine),
                                &r->created, r->seen, sizeof(r->seen) - 1,
                                &len));
    if (r->created)
        strcpy(r->seen, mine);
    else
        r->seen[len] = '\0';
    return NULL;
}

static void check_set_once(fixture_t *fx)
{
    wf_store_t *s = open_store(fx);
    char buf[16];
    size_t len = 0;
    bool created = false;
    pthread_t th[6];
    racer_t r[6];

    ASSERT_OK(wf_store_set_once(s, "k", "first", 5, &created, buf,
                                sizeof(buf), &len));
    ASSERT_TRUE(created);
    ASSERT_OK(wf_store_set_once(s, "k", "second", 6, &created, buf,
                                sizeof(buf), &len));
    ASSERT_TRUE(!created);
    ASSERT_EQ(len, 5);
    ASSERT_TRUE(memcmp(buf, "first", 5) == 0);
    expect_value(s, "k", "first");
    /* Only the length of the existing value. */
    ASSERT_OK(wf_store_set_once(s, "k", "x", 1, &created, NULL, 0, &len));
    ASSERT_TRUE(!created);
    ASSERT_EQ(len, 5);
    /* Racing handles: exactly one wins and all agree on its value. */
    for (int i = 0; i < 6; i++) {
        r[i] = (racer_t){.store = open_store(fx), .id = i};
        ASSERT_EQ(pthread_create(&th[i], NULL, racer_main, &r[i]), 0);
    }
    int winners = 0;
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        winners += r[i].created;
        ASSERT_TRUE(strcmp(r[i].seen, r[0].seen) == 0);
        wf_store_close(r[i].store);
    }
    ASSERT_EQ(winners, 1);
    wf_store_close(s);
    fixture_fini(fx);
}

static void *adder_main(void *arg)
{
    wf_store_t *s = arg;
    int64_t v;

    for (int i = 0; i < 25; i++)
        ASSERT_OK(wf_store_add(s, "counter", 1, &v));
    return NULL;
}

static void check_add(fixture_t *fx)
{
    wf_store_t *s = open_store(fx), *h[4];
    pthread_t th[4];
    int64_t v = 0;

    ASSERT_OK(wf_store_add(s, "n", 5, &v));
    ASSERT_EQ(v, 5);
    ASSERT_OK(wf_store_add(s, "n", -7, &v));
    ASSERT_EQ(v, -2);
    expect_value(s, "n", "-2"); /* counters are decimal text */
    ASSERT_OK(wf_store_set(s, "text", "abc", 3));
    ASSERT_STATUS(wf_store_add(s, "text", 1, &v), WEFT_ERR_INVALID_ARG);
    ASSERT_OK(wf_store_add(s, "n", 0, &v)); /* still usable after */
    ASSERT_EQ(v, -2);
    for (int i = 0; i < 4; i++) {
        h[i] = open_store(fx);
        ASSERT_EQ(pthread_create(&th[i], NULL, adder_main, h[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        wf_store_close(h[i]);
    }
    ASSERT_OK(wf_store_add(s, "counter", 0, &v));
    ASSERT_EQ(v, 100);
    wf_store_close(s);
    fixture_fini(fx);
}

static void check_wait(fixture_t *fx)
{
    wf_store_t *s = open_store(fx), *other = open_store(fx);
    const char *keys[] = {"w1", "w2", "w3"};
    setter_t st = {other, "w3", 200};
    pthread_t th;

    ASSERT_OK(wf_store_wait(s, keys, 0, 0));
    ASSERT_OK(wf_store_set(s, "w1", "1", 1));
    ASSERT_OK(wf_store_set(s, "w2", "2", 1));
    uint64_t t0 = wf_time_ms();
    ASSERT_STATUS(wf_store_wait(s, keys, 3, 100), WEFT_ERR_TIMEOUT);
    ASSERT_TRUE(wf_time_ms() - t0 < 1500);
    ASSERT_OK(wf_store_wait(s, keys, 2, 0));
    ASSERT_EQ(pthread_create(&th, NULL, setter_main, &st), 0);
    ASSERT_OK(wf_store_wait(s, keys, 3, 5000));
    pthread_join(th, NULL);
    wf_store_close(other);
    wf_store_close(s);
    fixture_fini(fx);
}

static void check_sub(fixture_t *fx)
{
    wf_store_t *s = open_store(fx), *a, *b, *ab;
    char buf[8];
    size_t len;
    int64_t v;

    ASSERT_OK(wf_store_sub(s, "g1/", &a));
    ASSERT_OK(wf_store_sub(s, "g2/", &b));
    ASSERT_OK(wf_store_sub(a, "h/", &ab));
    ASSERT_STR_CONTAINS(wf_store_describe(ab), "g1/h/");
    ASSERT_OK(wf_store_set(a, "x", "A", 1));
    ASSERT_OK(wf_store_set(b, "x", "B", 1));
    ASSERT_OK(wf_store_set(ab, "x", "AB", 2));
    expect_value(a, "x", "A");
    expect_value(b, "x", "B");
    expect_value(ab, "x", "AB");
    expect_value(s, "g1/x", "A");
    expect_value(s, "g1/h/x", "AB");
    ASSERT_STATUS(wf_store_get(s, "x", buf, sizeof(buf), &len, 0),
                  WEFT_ERR_TIMEOUT);
    ASSERT_OK(wf_store_add(a, "n", 2, &v));
    ASSERT_OK(wf_store_add(b, "n", 5, &v));
    ASSERT_EQ(v, 5);
    /* The shared connection lives until the last handle closes. */
    wf_store_close(s);
    wf_store_close(a);
    expect_value(ab, "x", "AB");
    expect_value(b, "x", "B");
    wf_store_close(ab);
    wf_store_close(b);
    fixture_fini(fx);
}

/* Two jobs on one store URI have separate key spaces. */
static void check_jobs(fixture_t *fx)
{
    wf_store_t *s = open_store(fx);
    wf_store_t *t = open_job(fx, wf_test_unique("other-job"));
    char buf[8];
    size_t len;

    ASSERT_OK(wf_store_set(s, "shared-name", "mine", 4));
    ASSERT_STATUS(wf_store_get(t, "shared-name", buf, sizeof(buf), &len, 0),
                  WEFT_ERR_TIMEOUT);
    ASSERT_OK(wf_store_set(t, "shared-name", "theirs", 6));
    expect_value(s, "shared-name", "mine");
    expect_value(t, "shared-name", "theirs");
    wf_store_close(t);
    wf_store_close(s);
    fixture_fini(fx);
}

#define STORE_TEST_(kname, KIND, check)                                        \
    WF_TEST(rdv_##kname##_##check, 30)                                         \
    {                                                                          \
        fixture_t fx;                                                          \
        fixture_init(&fx, KIND);                                               \
        check_##check(&fx);                                                    \
    }

#define STORE_TESTS(check)                                                     \
    STORE_TEST_(mem, KIND_MEM, check)                                          \
    STORE_TEST_(file, KIND_FILE, check)                                        \
    STORE_TEST_(tcp, KIND_TCP, check)

STORE_TESTS(basic)
STORE_TESTS(binary)
STORE_TESTS(get_wait)
STORE_TESTS(get_timeout)
STORE_TESTS(set_once)
STORE_TESTS(add)
STORE_TESTS(wait)
STORE_TESTS(sub)
STORE_TESTS(jobs)

WF_TEST(rdv_store_bad_uri, 10)
{
    wf_store_t *s = NULL;

    ASSERT_STATUS(wf_store_open("redis://x:1", "j", NULL, 100, &s),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(wf_store_open("mem://", "j", NULL, 100, &s),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(wf_store_open("file://", "j", NULL, 100, &s),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(wf_store_open("no-port", "j", NULL, 100, &s),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(wf_store_open("mem://x", "", NULL, 100, &s),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(wf_store_open(NULL, "j", NULL, 100, &s), WEFT_ERR_INVALID_ARG);
    ASSERT_TRUE(s == NULL);
    wf_store_close(NULL);
}

/* mem:// data goes with the last handle, like a job on the server. */
WF_TEST(rdv_mem_dropped_with_last_handle, 10)
{
    const char *uri = "mem://rdv-drop";
    wf_store_t *s, *t;
    char buf[8];
    size_t len;

    ASSERT_OK(wf_store_open(uri, "j", NULL, 1000, &s));
    ASSERT_OK(wf_store_open(uri, "j", NULL, 1000, &t));
    ASSERT_OK(wf_store_set(s, "k", "v", 1));
    wf_store_close(s);
    ASSERT_OK(wf_store_get(t, "k", buf, sizeof(buf), &len, 0));
    wf_store_close(t);
    ASSERT_OK(wf_store_open(uri, "j", NULL, 1000, &s));
    ASSERT_STATUS(wf_store_get(s, "k", buf, sizeof(buf), &len, 0),
                  WEFT_ERR_TIMEOUT);
    wf_store_close(s);
}
