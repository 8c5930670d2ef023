/*
 * test_config_parse.c - the WEFT_* value parsers on hostile text: the
 * regressions found by fuzz/fuzz_config.c, each checked against the value
 * the documentation promises (docs/env.md: durations ms/s/m, sizes k/m/g).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "test.h"

/* fuzz_config crash 08cec033: "nAn" parsed as a double and was converted
 * to int64 (undefined behaviour; UBSan aborts).  NaN and infinities in any
 * spelling must be rejected, and nothing else changes. */
WF_TEST(core_config_duration_rejects_nan, 10)
{
    const char *bad[] = {"nAn", "nan", "NAN(0x1)", "-nan", "nans", "inf",
                         "infinity", "1e400", "-1", "1e300m"};
    int64_t ms = 12345;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (wf_parse_duration_ms(bad[i], &ms))
            wf_test_fail(__FILE__, __LINE__, "'%s' accepted as %lld ms",
                         bad[i], (long long)ms);
    }
    ASSERT_EQ(ms, 12345); /* untouched on failure */
    ASSERT_TRUE(wf_parse_duration_ms("1.5s", &ms));
    ASSERT_EQ(ms, 1500);
    ASSERT_TRUE(wf_parse_duration_ms("2m", &ms));
    ASSERT_EQ(ms, 120000);
    ASSERT_TRUE(wf_parse_duration_ms("0", &ms));
    ASSERT_EQ(ms, 0);
    wf_config_t cfg;
    ASSERT_STATUS(wf_config_load(&cfg, "WEFT_TIMEOUT=nan"),
                  WEFT_ERR_INVALID_ARG);
}

/* Every knob of type duration: a number without a unit is seconds, from
 * the environment and from the config string alike, and ms, s and m mean
 * what they say.  The list comes from params.def itself, so a new
 * duration knob is checked without touching this test. */
typedef struct {
    const char *env;
    size_t offset;
} duration_knob_t;

#define WF_PARAM(field, env, type, def, doc)                                   \
    {env, WF_IS_DURATION_##type ? offsetof(wf_config_t, field) : SIZE_MAX},
#define WF_IS_DURATION_INT 0
#define WF_IS_DURATION_SIZE 0
#define WF_IS_DURATION_DURATION 1
#define WF_IS_DURATION_BOOL 0
#define WF_IS_DURATION_STRING 0
static const duration_knob_t knobs[] = {
#include "params.def"
};
#undef WF_PARAM

static int64_t duration_of(const wf_config_t *cfg, const duration_knob_t *k)
{
    return *(const int64_t *)((const char *)cfg + k->offset);
}

WF_TEST(core_config_duration_without_unit_is_seconds, 10)
{
    static const struct {
        const char *text;
        int64_t ms;
    } cases[] = {{"60", 60000}, {"1.5", 1500}, {"0", 0},
                 {"250ms", 250}, {"7s", 7000}, {"2m", 120000}};
    int checked = 0;

    for (size_t k = 0; k < sizeof(knobs) / sizeof(knobs[0]); k++) {
        if (knobs[k].offset == SIZE_MAX)
            continue;
        checked++;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            wf_config_t cfg;
            char text[96];

            snprintf(text, sizeof(text), "%s=%s", knobs[k].env,
                     cases[i].text);
            ASSERT_OK(wf_config_load(&cfg, text));
            if (duration_of(&cfg, &knobs[k]) != cases[i].ms)
                wf_test_fail(__FILE__, __LINE__, "%s read as %lld ms",
                             text, (long long)duration_of(&cfg, &knobs[k]));
            setenv(knobs[k].env, cases[i].text, 1);
            ASSERT_OK(wf_config_load(&cfg, NULL));
            unsetenv(knobs[k].env);
            if (duration_of(&cfg, &knobs[k]) != cases[i].ms)
                wf_test_fail(__FILE__, __LINE__, "env %s read as %lld ms",
                             text, (long long)duration_of(&cfg, &knobs[k]));
        }
    }
    ASSERT_TRUE(checked >= 3); /* WEFT_TIMEOUT and the rendezvous' two */
}

/* A refused duration names the variable and the units it takes. */
WF_TEST(core_config_bad_duration_names_the_units, 10)
{
    wf_config_t cfg;

    wf_test_log_capture();
    ASSERT_STATUS(wf_config_load(&cfg, "WEFT_TIMEOUT=60sec"),
                  WEFT_ERR_INVALID_ARG);
    const char *log = wf_test_log_text();
    if (!strstr(log, "WEFT_TIMEOUT=60sec") || !strstr(log, "ms, s or m") ||
        !strstr(log, "without a unit is seconds"))
        wf_test_fail(__FILE__, __LINE__, "message was: %s", log);
}
