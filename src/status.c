/*
 * status.c - names and descriptions of weft_status_t, from the one list in
 * weft.h.
 */
#include "weft.h"

WEFT_API const char *weft_strerror(weft_status_t status)
{
    switch (status) {
#define WF_STATUS_TEXT_(name, value, text)                                     \
    case WEFT_##name:                                                          \
        return text;
        WEFT_STATUS_LIST(WF_STATUS_TEXT_)
#undef WF_STATUS_TEXT_
    }
    return "unknown status";
}

WEFT_API const char *weft_status_name(weft_status_t status)
{
    switch (status) {
#define WF_STATUS_NAME_(name, value, text)                                     \
    case WEFT_##name:                                                          \
        return #name;
        WEFT_STATUS_LIST(WF_STATUS_NAME_)
#undef WF_STATUS_NAME_
    }
    return "UNKNOWN";
}

