/*
 * test_config_token.c - WEFT_TOKEN_FILE and keeping the token out of
 * config dumps and log lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "test.h"

static char captured[8192];

static void capture(void *ctx, weft_log_level_t level, const char *subsys,
                    const char *line)
{
    (void)ctx;
    (void)level;
    (void)subsys;
    size_t n = strlen(captured);
    snprintf(captured + n, sizeof(captured) - n, "%s\n", line);
}

static void write_file(char *path, const char *text, mode_t mode)
{
    int fd = mkstemp(path);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(write(fd, text, strlen(text)), (long long)strlen(text));
    close(fd);
    ASSERT_EQ(chmod(path, mode), 0);
}

WF_TEST(core_config_token_file, 10)
{
    char path[] = "/tmp/weft-tok-XXXXXX";
    wf_config_t cfg;

    unsetenv("WEFT_TOKEN");
    write_file(path, "s3cr3t-from-file  \r\nsecond line\n", 0600);
    setenv("WEFT_TOKEN_FILE", path, 1);
    ASSERT_OK(wf_config_load(&cfg, NULL));
    ASSERT_TRUE(strcmp(cfg.token, "s3cr3t-from-file") == 0);
    /* WEFT_TOKEN wins over the file. */
    setenv("WEFT_TOKEN", "direct", 1);
    ASSERT_OK(wf_config_load(&cfg, NULL));
    ASSERT_TRUE(strcmp(cfg.token, "direct") == 0);
    unsetenv("WEFT_TOKEN");
    unlink(path);
    ASSERT_OK(weft_set_logger(capture, NULL));
    ASSERT_STATUS(wf_config_load(&cfg, NULL), WEFT_ERR_INVALID_ARG);
    ASSERT_STR_CONTAINS(captured, path);
    char empty[] = "/tmp/weft-tok-XXXXXX";
    write_file(empty, "\n", 0600);
    setenv("WEFT_TOKEN_FILE", empty, 1);
    ASSERT_STATUS(wf_config_load(&cfg, NULL), WEFT_ERR_INVALID_ARG);
    ASSERT_STR_CONTAINS(captured, "is empty");
    unlink(empty);
    unsetenv("WEFT_TOKEN_FILE");
}

WF_TEST(core_config_token_file_readable_warns, 10)
{
    char path[] = "/tmp/weft-tok-XXXXXX";
    wf_config_t cfg;

    unsetenv("WEFT_TOKEN");
    write_file(path, "tok\n", 0644);
    setenv("WEFT_TOKEN_FILE", path, 1);
    ASSERT_OK(weft_set_logger(capture, NULL));
    ASSERT_OK(wf_config_load(&cfg, NULL));
    ASSERT_STR_CONTAINS(captured, "can be read by other users");
    unlink(path);
    unsetenv("WEFT_TOKEN_FILE");
}

/* The token is a secret: config dumps and the "set by" log lines show
 * "(set)" instead. */
WF_TEST(core_config_token_not_printed, 10)
{
    char *buf = NULL;
    size_t len = 0;

    setenv("WEFT_TOKEN", "do-not-print-me", 1);
    setenv("WEFT_LOG", "info", 1);
    ASSERT_OK(weft_set_logger(capture, NULL));
    wf_log_reconfigure("info", "all");
    FILE *f = open_memstream(&buf, &len);
    ASSERT_OK(weft_config_dump(f));
    fclose(f);
    ASSERT_STR_CONTAINS(buf, "WEFT_TOKEN");
    ASSERT_STR_CONTAINS(buf, "(set)");
    ASSERT_TRUE(strstr(buf, "do-not-print-me") == NULL);
    ASSERT_TRUE(strstr(captured, "do-not-print-me") == NULL);
    wf_config_t cfg;
    ASSERT_OK(wf_config_load(&cfg, "WEFT_TOKEN=override-secret"));
    ASSERT_TRUE(strstr(captured, "override-secret") == NULL);
    ASSERT_STR_CONTAINS(captured, "WEFT_TOKEN set by config to (set)");
    free(buf);
}
