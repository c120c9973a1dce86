// The shipped configs and calibration, loaded on first use.
#include "tests/model/capacity/shipped_configs.h"

#include "base/check.h"
#include "model/calibration.h"

namespace kvsim::model {

const Catalog& ShippedCatalog() {
  static const Catalog* catalog = [] {
    Result<Catalog> opened = Catalog::Open("configs");
    KVSIM_CHECK(opened.ok()) << opened.status().ToString();
    return new Catalog(std::move(opened).value());
  }();
  return *catalog;
}

const StepTimeParams& ShippedParams() {
  static const StepTimeParams* params = [] {
    Result<CalibrationSpec> spec =
        LoadCalibrationSpec(ShippedCatalog().CalibrationPath("kimi-k2.6-8xh200"));
    KVSIM_CHECK(spec.ok()) << spec.status().ToString();
    Result<Calibration> calibration = Calibrate(*spec, ShippedCatalog());
    KVSIM_CHECK(calibration.ok()) << calibration.status().ToString();
    return new StepTimeParams(calibration->params);
  }();
  return *params;
}

}  // namespace kvsim::model
