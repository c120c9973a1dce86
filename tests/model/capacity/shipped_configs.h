// The shipped configs folder (configs/, in a test's data), opened once, and the step-time
// coefficients its Kimi K2.6 calibration fits: what most capacity-model tests plan with.
#pragma once

#include "model/catalog.h"
#include "model/step_time.h"

namespace kvsim::model {

const Catalog& ShippedCatalog();
const StepTimeParams& ShippedParams();

}  // namespace kvsim::model
