#ifndef GHD_HANDLERS_TRANSFER_H
#define GHD_HANDLERS_TRANSFER_H

#include "core/transfer/transfer.h"
#include "http/request.h"

/* What the upload and download handlers share on top of the transfer
 * engine (core/transfer.h). */

/* Whom a transfer for `req` serves: its request id, client address and
 * tenant (ghd_service_transfer_client). */
void ghd_transfer_client_of(const struct ghd_request *req, struct ghd_transfer_client *out);

/* Replies with the problem for code `rc` and its detail `err` from the
 * transfer engine, with Retry-After when the code means "retry later" (the
 * staging ring stayed busy, or the client's share of it). Returns rc. */
int ghd_transfer_reply_problem(struct ghd_reply *rep, struct ghd_request *req, int rc,
                               const struct ghd_err *err);

#endif
