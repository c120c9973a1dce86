// The rounding counts of the fast GQA decode path's order, for the FP64 reference's bound: now in
// the reference library (kernels/attention/reference/path_bound.h), which the simulator's data
// plane shares; the tests keep their names.
#pragma once

#include "kernels/attention/reference/path_bound.h"
#include "tests/kernels/attention/reference_check.h"

namespace kvsim::testing {

using reference::FastGqaArithmetic;
using reference::FastGqaWorstCaseBoundModels;

}  // namespace kvsim::testing
