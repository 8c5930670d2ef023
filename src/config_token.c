/*
 * config_token.c - WEFT_TOKEN_FILE: the token read from a file, so it does
 * not have to sit in the environment (readable in /proc/PID/environ by the
 * same user and inherited by every child) or on a command line (readable
 * by every user in ps).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "config.h"

/* Strips the line end and trailing blanks an editor or `echo` leaves. */
static void trim_line_end(char *s)
{
    size_t n = strcspn(s, "\r\n");
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    s[n] = '\0';
}

weft_status_t wf_config_read_token_file(wf_config_t *cfg)
{
    const char *path = cfg->token_file;
    char line[WF_CONFIG_STR_MAX + 2];
    struct stat sb;

    if (!*path || *cfg->token) /* WEFT_TOKEN wins over the file */
        return WEFT_OK;
    FILE *f = fopen(path, "r");
    if (!f) {
        WEFT_WARN(ENV, "WEFT_TOKEN_FILE=%s cannot be read: %s", path,
                  wf_errno_str(errno));
        return WEFT_ERR_INVALID_ARG;
    }
    if (fstat(fileno(f), &sb) == 0 && (sb.st_mode & 077))
        WEFT_WARN_ONCE(ENV, "WEFT_TOKEN_FILE=%s can be read by other users "
                            "(mode %03o); chmod 600 it", path,
                       (unsigned)(sb.st_mode & 0777));
    bool got = fgets(line, sizeof(line), f) != NULL;
    fclose(f);
    if (got && strlen(line) == sizeof(line) - 1 &&
        line[sizeof(line) - 2] != '\n') {
        WEFT_WARN(ENV, "WEFT_TOKEN_FILE=%s: the token is longer than %d "
                       "bytes", path, WF_CONFIG_STR_MAX - 1);
        return WEFT_ERR_INVALID_ARG;
    }
    if (got)
        trim_line_end(line);
    if (!got || !*line) {
        WEFT_WARN(ENV, "WEFT_TOKEN_FILE=%s is empty: its first line must "
                       "hold the token", path);
        return WEFT_ERR_INVALID_ARG;
    }
    wf_strlcpy(cfg->token, line, WF_CONFIG_STR_MAX);
    memset(line, 0, sizeof(line));
    return WEFT_OK;
}
