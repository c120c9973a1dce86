// Printing the calibration of the step-time model (`kvsim plan --calibration-report`): the fitted
// and assumed coefficients and, for every published point, the model's answer and its error.
#pragma once

#include <ostream>

#include "model/calibration.h"

namespace kvsim::cli {

// As text: the coefficients, then a table of the points, then the largest prediction error.
void PrintCalibrationReport(std::ostream& out, const model::Calibration& calibration);

// The same figures as one JSON document (--json).
void PrintCalibrationJson(std::ostream& out, const model::Calibration& calibration);

}  // namespace kvsim::cli
