/*
 * fuzz_quiet.h - a weft logger that drops every line: the harnesses feed
 * garbage on purpose, and millions of warnings would only slow them down.
 */
#ifndef WF_FUZZ_QUIET_H
#define WF_FUZZ_QUIET_H

#include "weft.h"

static inline void wf_fuzz_quiet(void *ctx, weft_log_level_t level,
                                 const char *subsys, const char *line)
{
    (void)ctx;
    (void)level;
    (void)subsys;
    (void)line;
}

#endif /* WF_FUZZ_QUIET_H */
