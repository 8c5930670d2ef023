/*
 * weft-info - what this weft is and how it is configured:
 *   weft-info             version and compiled-in parts
 *   weft-info --config    every WEFT_* knob with value, source, description
 *   weft-info --env-markdown   docs/env.md, generated from params.def
 */
#include <stdio.h>
#include <string.h>

#include "weft.h"

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--config") == 0)
        return weft_config_dump(stdout) == WEFT_OK ? 0 : 1;
    if (argc == 2 && strcmp(argv[1], "--env-markdown") == 0)
        return weft_config_dump_markdown(stdout) == WEFT_OK ? 0 : 1;
    if (argc > 1) {
        fprintf(stderr, "usage: weft-info [--config | --env-markdown]\n");
        return strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    int v = weft_get_version();
    printf("weft %d.%d.%d\n", v / 10000, v / 100 % 100, v % 100);
    printf("%s\n", weft_build_info());
    printf("run `weft-info --config` for every setting\n");
    return 0;
}
