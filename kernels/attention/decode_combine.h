// The decode combine kernel's launcher, shared by every split kernel that writes the workspace
// layout of MakeDecodeWorkspaceLayout (the simple path's and the fast GQA path's).
#pragma once

#include "base/status.h"
#include "kernels/attention/attention_launch.h"

namespace kvsim::cuda {

// Enqueues, on `launch.stream`, the kernel that checks each request (its length and every split's
// page flag), adds its splits' partials in split order and writes out, lse and request_status.
Status LaunchDecodeCombine(const DecodeAttentionLaunch& launch);

}  // namespace kvsim::cuda
