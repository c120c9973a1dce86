// Int4Speed: how fast routed experts in INT4 (W4A16) multiply, relative to the BF16 tensor-core
// rate the model otherwise gives them: measured by row count, from a kernel table
// (kernel_table_loader.h), or, without one, the calibration's assumed int4_dequant_efficiency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvsim::model {

struct Int4Speed {
  // Measured row counts, ascending, and the INT4 speed at each (BF16 time / INT4 time). Empty:
  // nothing measured for this plan, and the assumption applies everywhere.
  std::vector<double> rows;
  std::vector<double> speed;
  // With a table: "measured (FILE, DEVICE, DATE; shapes ...)" or, for a test fixture, a label
  // that says it is one. Without: why there is none ("no kernel table at PATH"); may be empty.
  std::string source;

  bool measured() const { return !rows.empty(); }
};

// Rows one touched routed expert multiplies when `tokens` tokens each route to `k` of `experts`:
// tokens x k / expected experts touched (ExpectedExpertsTouched in step_time.h). tokens >= 1.
double RowsPerExpert(int experts, int k, int64_t tokens);

// The speed at `rows`: interpolated linearly in log(rows) between the two measured row counts
// around it, held at the nearest end outside them; `assumed` when nothing is measured.
double Int4SpeedAt(const Int4Speed& speed, double assumed, double rows);

// The --explain formula of that speed: where it came from and, when measured, how it was read at
// `rows` (between which measured points, or held at which end).
std::string Int4SpeedFormula(const Int4Speed& speed, double assumed, double rows);

}  // namespace kvsim::model
