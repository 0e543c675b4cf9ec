// SPDX-License-Identifier: MIT
#ifndef SANDBOXD_FLOW_TEMPLATE_H
#define SANDBOXD_FLOW_TEMPLATE_H
#endif
