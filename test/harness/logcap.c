/*
 * logcap.c - keeps this process's log lines for a test's assertions
 * (many tests check that a message names the cause).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "test.h"

static char log_text[65536];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void keep_line(void *ctx, weft_log_level_t level, const char *subsys,
                      const char *line)
{
    (void)ctx;
    (void)level;
    (void)subsys;
    pthread_mutex_lock(&log_lock);
    size_t used = strlen(log_text);
    snprintf(log_text + used, sizeof(log_text) - used, "%s\n", line);
    pthread_mutex_unlock(&log_lock);
}

void wf_test_log_capture(void)
{
    pthread_mutex_lock(&log_lock);
    log_text[0] = '\0';
    pthread_mutex_unlock(&log_lock);
    weft_set_logger(keep_line, NULL);
}

const char *wf_test_log_text(void)
{
    return log_text; /* read once the ranks have been joined */
}
