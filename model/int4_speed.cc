// INT4 expert speed: interpolation over measured row counts and its explanation.
#include "model/int4_speed.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace kvsim::model {
namespace {

// The index i of the measured interval [rows[i], rows[i + 1]] holding `rows`; only for rows
// strictly inside the measured range.
size_t IntervalOf(const Int4Speed& s, double rows) {
  const auto upper = std::upper_bound(s.rows.begin(), s.rows.end(), rows);
  return static_cast<size_t>(upper - s.rows.begin()) - 1;
}

}  // namespace

double Int4SpeedAt(const Int4Speed& s, double rows) {
  KVSIM_CHECK(s.measured());
  KVSIM_CHECK_EQ(s.rows.size(), s.speed.size());
  if (rows <= s.rows.front()) return s.speed.front();
  if (rows >= s.rows.back()) return s.speed.back();
  const size_t i = IntervalOf(s, rows);
  const double t =
      (std::log(rows) - std::log(s.rows[i])) / (std::log(s.rows[i + 1]) - std::log(s.rows[i]));
  return s.speed[i] + t * (s.speed[i + 1] - s.speed[i]);
}

std::string Int4SpeedFormula(const Int4Speed& s, double rows) {
  KVSIM_CHECK(s.measured());
  std::string where;
  if (rows <= s.rows.front()) {
    where =
        fmt::format("at or below the smallest measured m {:g}: held at its ratio", s.rows.front());
  } else if (rows >= s.rows.back()) {
    where =
        fmt::format("at or above the largest measured m {:g}: held at its ratio", s.rows.back());
  } else {
    const size_t i = IntervalOf(s, rows);
    where = fmt::format("between m {:g} ({:.3f}) and m {:g} ({:.3f}), linear in log m", s.rows[i],
                        s.speed[i], s.rows[i + 1], s.speed[i + 1]);
  }
  return fmt::format("{}: BF16 time / INT4 time at {:.3g} rows per expert, {}", s.source, rows,
                     where);
}

}  // namespace kvsim::model
