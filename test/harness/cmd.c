/*
 * cmd.c - wf_test_run_cmd: run a shell command, keep its output (test.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "test.h"

int wf_test_run_cmd(const char *cmd, char **out)
{
    char full[8192];
    snprintf(full, sizeof(full), "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    ASSERT_TRUE(p != NULL);
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap);
    ASSERT_TRUE(buf != NULL);
    while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (cap - len < 1024) {
            buf = realloc(buf, cap *= 2);
            ASSERT_TRUE(buf != NULL);
        }
    }
    buf[len] = '\0';
    int st = pclose(p);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
