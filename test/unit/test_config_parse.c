/*
 * test_config_parse.c - the WEFT_* value parsers on hostile text: the
 * regressions found by fuzz/fuzz_config.c, each checked against the value
 * the documentation promises (docs/env.md: durations ms/s/m, sizes k/m/g).
 */
#include <math.h>
#include <stdio.h>

#include "config.h"
#include "test.h"

/* fuzz_config crash 08cec033: "nAn" parsed as a double and was converted
 * to int64 (undefined behaviour; UBSan aborts).  NaN and infinities in any
 * spelling must be rejected, and nothing else changes. */
WF_TEST(config_duration_rejects_nan, 10)
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
