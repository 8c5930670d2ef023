/*
 * launch_pmi.h - the rendezvous of a job whose launcher gives no address,
 * through the launcher's process-management interface (launch_pmi.c).
 */
#ifndef WF_LAUNCH_PMI_H
#define WF_LAUNCH_PMI_H

#include <stddef.h>

#include "config.h"
#include "weft.h"

/* Collective over the job: rank 0 starts a rendezvous server (*server, to
 * be stopped with the communicator; NULL on the other ranks) and every
 * rank gets its address, the job id (unless WEFT_JOB_ID was given) and the
 * token into cfg.  WEFT_ERR_UNSUPPORTED when the process was started with
 * no such interface; `why` says what was looked for or what failed. */
weft_status_t wf_launch_pmi_rendezvous(wf_config_t *cfg,
                                       weft_server_t *server, char *why,
                                       size_t why_len);

#endif /* WF_LAUNCH_PMI_H */
