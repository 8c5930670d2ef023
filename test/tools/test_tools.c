/*
 * test_tools.c - the binaries as a user runs them: weftrun, weft-bench,
 * weft-info, and `make install` + pkg-config with the README's C example.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

extern const char *wf_test_build_dir;

/* Runs a shell command, returns its exit code and output (malloc'd). */
static int run(const char *cmd, char **out)
{
    char full[4096];
    snprintf(full, sizeof(full), "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    ASSERT_TRUE(p != NULL);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (cap - len < 1024)
            buf = realloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    int st = pclose(p);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

WF_TEST(tools_weftrun_prefix_and_exit_code, 60)
{
    char cmd[1024], *out;
    snprintf(cmd, sizeof(cmd),
             "%s -n 3 -l -- sh -c 'echo hello $WEFT_RANK of $WEFT_WORLD_SIZE; "
             "[ $WEFT_RANK = 1 ] && exit 7; sleep 30'",
             wf_test_tool("weftrun"));
    double t0 = wf_test_now_s();
    int code = run(cmd, &out);
    ASSERT_EQ(code, 7);               /* the failing rank's code */
    ASSERT_TRUE(wf_test_now_s() - t0 < 10);   /* the sleepers were stopped */
    ASSERT_STR_CONTAINS(out, "[1] hello 1 of 3");
    ASSERT_STR_CONTAINS(out, "rank 1 exited with code 7");
    free(out);
    snprintf(cmd, sizeof(cmd), "%s -n 2 -- true", wf_test_tool("weftrun"));
    ASSERT_EQ(run(cmd, &out), 0);
    free(out);
    snprintf(cmd, sizeof(cmd), "%s -n 0 -- true", wf_test_tool("weftrun"));
    ASSERT_EQ(run(cmd, &out), 2);
    free(out);
}

/* Hosts given but all of them this machine: ranks start here, with -x
 * and torch's variables; slots are counted; bad host lists and files are
 * refused naming the cause (the ssh path: make test-launchers, ssh.sh). */
WF_TEST(tools_weftrun_hosts_and_variables, 60)
{
    char cmd[1024], *out, dir[] = "/tmp/weft-hosts-XXXXXX", path[128];
    const char *w = wf_test_tool("weftrun");
    snprintf(cmd, sizeof(cmd), "%s -H localhost:2,127.0.0.1 -l -x FOO=bar "
             "sh -c 'echo v $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE "
             "$FOO $MASTER_ADDR'", w);
    ASSERT_EQ(run(cmd, &out), 0);
    /* One rank per slot; the list's hosts are one machine, so one local
     * group of 3 */
    ASSERT_STR_CONTAINS(out, "[0] v 0 3 0 3 bar 127.0.0.1");
    ASSERT_STR_CONTAINS(out, "[2] v 2 3 2 3 bar 127.0.0.1");
    free(out);
    snprintf(cmd, sizeof(cmd), "%s -np 5 -H a:2,b true", w);
    ASSERT_EQ(run(cmd, &out), 2);
    ASSERT_STR_CONTAINS(out, "5 ranks but the hosts have 3 slots");
    free(out);
    snprintf(cmd, sizeof(cmd), "%s -H a:x true", w);
    ASSERT_EQ(run(cmd, &out), 2);
    ASSERT_STR_CONTAINS(out, "'a:x': the slots after ':' are not a number");
    free(out);
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/hosts", dir);
    FILE *f = fopen(path, "w");
    ASSERT_TRUE(f != NULL);
    fprintf(f, "# the cluster\nlocalhost slots=2 max_slots=4\n\n"
               "localhost:1\nlocalhost slots=zero\n");
    fclose(f);
    snprintf(cmd, sizeof(cmd), "%s --hostfile %s true", w, path);
    ASSERT_EQ(run(cmd, &out), 2);
    ASSERT_STR_CONTAINS(out, "line 5: 'slots=zero' is not a slot count");
    free(out);
    f = fopen(path, "w");
    ASSERT_TRUE(f != NULL);
    fprintf(f, "localhost slots=2 # two\nlocalhost:1\n");
    fclose(f);
    snprintf(cmd, sizeof(cmd), "%s --hostfile %s sh -c 'echo n $WORLD_SIZE'",
             w, path);
    ASSERT_EQ(run(cmd, &out), 0);
    ASSERT_STR_CONTAINS(out, "n 3");
    free(out);
    unlink(path);
    rmdir(dir);
}

static int count_rows(const char *out)
{
    int rows = 0;
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (*l != '#' && *l != '\n' && strstr(l, "float") && strchr(l, '\n'))
            rows++;
    return rows;
}

WF_TEST(tools_bench_allreduce_own_ranks, 120)
{
    char cmd[1024], *out;
    snprintf(cmd, sizeof(cmd), "%s allreduce -n 3 -b 8 -e 1M -f 8 -w 1 -r 3",
             wf_test_tool("weft-bench"));
    ASSERT_EQ(run(cmd, &out), 0);
    ASSERT_STR_CONTAINS(out, "#wrong");
    ASSERT_STR_CONTAINS(out, "# Out of bounds values : 0 OK");
    ASSERT_STR_CONTAINS(out, "# Avg bus bandwidth");
    ASSERT_EQ(count_rows(out), 6); /* 8 64 512 4K 32K 256K */
    free(out);
}

WF_TEST(tools_bench_under_weftrun_and_env, 120)
{
    char cmd[1024], *out;
    snprintf(cmd, sizeof(cmd), "WEFT_LOG=info %s -n 2 -- %s sendrecv -b 8 "
             "-e 64K -f 16 -w 1 -r 2 -d int8", wf_test_tool("weftrun"),
             wf_test_tool("weft-bench"));
    ASSERT_EQ(run(cmd, &out), 0);
    ASSERT_STR_CONTAINS(out, "# Out of bounds values : 0 OK");
    ASSERT_STR_CONTAINS(out, "int8");
    /* WEFT_LOG=info: per-rank lines with host:pid:tid and the rank. */
    ASSERT_STR_CONTAINS(out, "[1] weft info init: rank 1 of 2 joined");
    free(out);
    snprintf(cmd, sizeof(cmd), "%s allreduce -n 2 -d nosuch",
             wf_test_tool("weft-bench"));
    ASSERT_EQ(run(cmd, &out), 2);
    ASSERT_STR_CONTAINS(out, "bad or missing value for -d");
    free(out);
}

WF_TEST(tools_info_config, 30)
{
    char cmd[1024], *out;
    snprintf(cmd, sizeof(cmd), "WEFT_TIMEOUT=9s WEFT_CHUNKSIZE=1 %s --config",
             wf_test_tool("weft-info"));
    ASSERT_EQ(run(cmd, &out), 0);
    ASSERT_STR_CONTAINS(out, "WEFT_TIMEOUT");
    ASSERT_STR_CONTAINS(out, "9000ms");
    ASSERT_STR_CONTAINS(out, "(env)");
    ASSERT_STR_CONTAINS(out, "did you mean WEFT_CHUNK_SIZE?");
    free(out);
    snprintf(cmd, sizeof(cmd), "%s", wf_test_tool("weft-info"));
    ASSERT_EQ(run(cmd, &out), 0);
    /* tcp always; ib too where the verbs header was there at build time. */
    ASSERT_STR_CONTAINS(out, "transports: ");
    ASSERT_STR_CONTAINS(out, "tcp");
    free(out);
}

/* The README's C example, built against an installed weft with pkg-config
 * and run on two ranks. */
WF_TEST(tools_install_pkgconfig_readme_example, 300)
{
    char dir[] = "/tmp/weft-install-XXXXXX", cmd[4096], *out;
    ASSERT_TRUE(mkdtemp(dir) != NULL);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    WF_SKIP("this build's libweft needs the sanitizer runtime, which a "
            "plain program built with pkg-config flags does not load");
#endif
    if (system("command -v pkg-config >/dev/null") != 0)
        WF_SKIP("pkg-config is not installed (make deps installs it)");
    snprintf(cmd, sizeof(cmd), "make -s install BUILD=%s PREFIX=%s/prefix",
             wf_test_build_dir, dir);
    ASSERT_EQ(run(cmd, &out), 0);
    free(out);
    /* The CUDA layer, where this build has one, goes beside libweft.so,
     * where the loader looks for it (cuda/dev_load.c). */
    snprintf(cmd, sizeof(cmd),
             "test ! -f %s/lib/libweft_cuda.so || "
             "test -f %s/prefix/lib/libweft_cuda.so", wf_test_build_dir, dir);
    ASSERT_EQ(system(cmd), 0);
    /* Extract the first ```c block of README.md. */
    snprintf(cmd, sizeof(cmd),
             "awk '/^```c$/{f=1;next} /^```$/{if(f)exit} f' README.md > "
             "%s/example.c && test -s %s/example.c", dir, dir);
    ASSERT_EQ(system(cmd), 0);
    snprintf(cmd, sizeof(cmd),
             "cd %s && PKG_CONFIG_PATH=%s/prefix/lib/pkgconfig && "
             "export PKG_CONFIG_PATH && cc -std=c11 -Wall -Werror example.c "
             "$(pkg-config --cflags --libs weft) -Wl,-rpath,%s/prefix/lib "
             "-o example && %s/prefix/bin/weftrun -n 2 ./example",
             dir, dir, dir, dir);
    int code = run(cmd, &out);
    if (code != 0)
        fprintf(stderr, "%s\n", out);
    ASSERT_EQ(code, 0);
    free(out);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ASSERT_EQ(system(cmd), 0);
}
