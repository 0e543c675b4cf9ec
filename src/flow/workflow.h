// SPDX-License-Identifier: MIT
#ifndef SANDBOXD_FLOW_WORKFLOW_H
#define SANDBOXD_FLOW_WORKFLOW_H
#endif
