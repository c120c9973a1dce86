// Int4Speed: how fast routed experts in INT4 (W4A16) multiply relative to BF16 weights, measured by
// row count in a kernel table (kernel_table_loader.h). Without one, INT4 experts take the kernel
// profile's published weight-only efficiencies (step_time.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvsim::model {

struct Int4Speed {
  // Measured row counts, ascending, and the INT4 speed at each (BF16 time / INT4 time). Empty:
  // nothing measured for this plan.
  std::vector<double> rows;
  std::vector<double> speed;
  // With a table: "measured (FILE, DEVICE, DATE; shapes ...)" or, for a test fixture, a label
  // that says it is one. Without: why there is none ("no kernel table at PATH"); may be empty.
  std::string source;

  bool measured() const { return !rows.empty(); }
};

// The speed at `rows` (`speed` measured): interpolated linearly in log(rows) between the two
// measured row counts around it, held at the nearest end outside them.
double Int4SpeedAt(const Int4Speed& speed, double rows);

// The --explain formula of that speed: where it came from and how it was read at `rows` (between
// which measured points, or held at which end).
std::string Int4SpeedFormula(const Int4Speed& speed, double rows);

}  // namespace kvsim::model
