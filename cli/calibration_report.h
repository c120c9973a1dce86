// Printing the calibration of the step-time model (`kvsim plan --calibration-report`): the fitted
// figures with their bounds, and for every published point the model's answer, its error and its
// leave-one-out prediction.
#pragma once

#include <ostream>
#include <vector>

#include "model/calibration.h"

namespace kvsim::cli {

// As text: the fitted figures, then a table of the points, then the largest errors.
void PrintCalibrationReport(std::ostream& out, const model::Calibration& calibration,
                            const std::vector<model::LeaveOneOutRow>& leave_one_out);

// The same figures as one JSON document (--json).
void PrintCalibrationJson(std::ostream& out, const model::Calibration& calibration,
                          const std::vector<model::LeaveOneOutRow>& leave_one_out);

}  // namespace kvsim::cli
