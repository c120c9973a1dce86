// Runs the fast GQA decode path's entry points directly on a test case (DecodeAttention reaches
// them with KernelPath::kFast): the launch DecodeAttention builds (MakeDecodeLaunch), a poisoned
// workspace on CUDA, the CPU twin or the CUDA launcher.
#pragma once

#include "base/status.h"
#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_attention.h"
#include "kernels/backend.h"
#include "tests/kernels/attention/attention_case.h"

namespace kvsim::testing {

// A kernel entry point on a launch: on CUDA with a workspace of DecodeWorkspaceBytes(args).
using DecodeLauncher = Status (*)(const DecodeAttentionLaunch& launch);

// Runs `launcher` on `backend` (allocating the workspace on CUDA and synchronising before it is
// freed), for RunDecodeWith.
Status RunLauncher(Backend& backend, const DecodeAttentionArgs& args, DecodeLauncher launcher);

// The fast GQA path on `backend`: the CPU twin, or the CUDA launcher.
Result<DecodeOutputs> RunFastGqa(Backend& backend, const AttentionCase& c, DeviceCase& device,
                                 AttentionOutputDtype out_dtype);

// Breaks requests 1 and 2 of `c` (3 requests or more) on `backend`: request 1's third block-table
// entry becomes an id no pool has, request 2 asks for one token more than its row covers. A read
// through either would be out of bounds; they must report statuses 2 and 1 and read nothing.
Status BreakRequestsOneAndTwo(Backend& backend, AttentionCase& c, DeviceCase& device);

}  // namespace kvsim::testing
