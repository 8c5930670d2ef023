/*
 * test_fortran.c - the Fortran module (fortran/weft.F90) from Fortran:
 * test/fortran/test_weft_f.F90 under weftrun on 3 ranks checks every
 * collective on the four types in 2-D and 3-D, point-to-point, split and
 * dup against values it computes itself, and says how many checks passed.
 * mk/fortran.mk builds it where gfortran is (make test, make fortran).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

/* The program's path, or a skip saying why it is not there. */
static const char *fortran_program(void)
{
    const char *path = wf_test_tool("../fortran/test_weft_f");
    if (access(path, X_OK) == 0)
        return path;
    if (system("command -v gfortran >/dev/null 2>&1") != 0)
        WF_SKIP("gfortran not found: the Fortran module is not built "
                "(apt-get install gfortran)");
    WF_SKIP("%s is not built (make test or make fortran builds it)", path);
    return NULL;
}

WF_TEST(tools_fortran_module_under_weftrun, 120)
{
    const char *prog = fortran_program();
    char cmd[2048], *out;
    snprintf(cmd, sizeof(cmd), "%s -n 3 %s", wf_test_tool("weftrun"), prog);
    int code = wf_test_run_cmd(cmd, &out);
    if (code != 0 || strstr(out, "FAILED"))
        fprintf(stderr, "%s\n---\n%s\n", cmd, out);
    ASSERT_EQ(code, 0);
    ASSERT_TRUE(strstr(out, "FAILED") == NULL);
    const char *line = strstr(out, "fortran: ");
    ASSERT_TRUE(line != NULL);
    long passed = 0;
    char word[16] = "";
    ASSERT_EQ(sscanf(line, "fortran: %ld checks %15s", &passed, word), 2);
    ASSERT_STR_CONTAINS(word, "passed");
    /* Each of the 8 type and shape runs makes more than 60 checks, counted
     * over the 3 ranks. */
    ASSERT_TRUE(passed > 8 * 60);
    free(out);

    /* On another rank count it says so and fails, rather than passing
     * checks written for 3. */
    snprintf(cmd, sizeof(cmd), "%s -n 2 %s", wf_test_tool("weftrun"), prog);
    ASSERT_TRUE(wf_test_run_cmd(cmd, &out) != 0);
    ASSERT_STR_CONTAINS(out, "run me with weftrun -n 3, not 2");
    ASSERT_TRUE(strstr(out, "checks passed") == NULL);
    free(out);
}
