/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_APP_RPC_H
#define DROCE_APP_RPC_H

#include <stddef.h>
#include <stdio.h>

#include "droce_core.h"
#include "droce_net.h"

/* droce's RPC server (rpc_app.c). */
struct app_rpc;

/* With rpc.port set: the stack lent to the hcom4db library and its
 * server started on port 0's address (*out; NULL when rpc.port is 0).
 * Before droce_stack_start(). 0, or a negative errno with @p err set.
 */
int app_rpc_start(const struct droce_conf *conf, struct droce_stack *stack, struct app_rpc **out,
		  char *err, size_t errlen);
/* The server destroyed on a thread of its own while the stack runs
 * (it needs the control loop), then @p then(@p arg): once.
 */
int app_rpc_stop_async(struct app_rpc *r, void (*then)(void *arg), void *arg);
/* After the control loop ended. */
void app_rpc_destroy(struct app_rpc *r);
/* The process's RPC counters, one line. */
void app_rpc_print_summary(FILE *out);

#endif /* DROCE_APP_RPC_H */
