// gnuplot output for simulation runs.
#include "cli/run_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "cli/gnuplot.h"
#include "cli/output_file.h"

namespace kvsim::cli {
namespace {

// At most this many points per CDF: every value when fewer, evenly spaced ranks otherwise.
constexpr size_t kCdfPoints = 2000;

// A data block of a CDF of `values` in milliseconds: value, fraction of requests at or below it.
std::string CdfBlock(const std::string& name, std::vector<sim::SimNs> values) {
  std::string block = "$" + name + " << EOD\n";
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const size_t step = std::max<size_t>(1, n / kCdfPoints);
  for (size_t i = 0; i < n; i += step) {
    block += fmt::format("{:.3f} {:.6f}\n", static_cast<double>(values[i]) * 1e-6,
                         static_cast<double>(i + 1) / static_cast<double>(n));
  }
  if (n > 0 && (n - 1) % step != 0) {
    block += fmt::format("{:.3f} 1\n", static_cast<double>(values.back()) * 1e-6);
  }
  return block + "EOD\n";
}

}  // namespace

Result<std::string> RunPlotScript(const sim::RunReport& r, const std::string& path) {
  KVSIM_RETURN_IF_ERROR(CheckPlotPath(path));
  std::vector<sim::SimNs> ttft, tpot, e2e;
  for (const sim::RequestRecord& q : r.requests) {
    if (q.phase != sim::RequestPhase::kFinished) continue;
    ttft.push_back(q.first_token_ns - q.arrival_ns);
    e2e.push_back(q.end_ns - q.arrival_ns);
    if (q.generated >= 2) tpot.push_back((q.last_token_ns - q.first_token_ns) / (q.generated - 1));
  }
  if (e2e.empty()) return FailedPreconditionError("nothing to plot: no request finished");
  std::string script = GnuplotOutput(path, 900, 820);
  script += CdfBlock("ttft", ttft) + CdfBlock("tpot", tpot) + CdfBlock("e2e", e2e);
  script += "$pool << EOD\n";
  for (const sim::PoolSample& s : r.pool_series) {
    script += fmt::format("{:.6f} {} {} {}\n", sim::NsToSeconds(s.time_ns), s.pages_used, s.running,
                          s.waiting);
  }
  script += "EOD\n";
  const std::string title = GnuplotQuoted(fmt::format(
      "{} (seed 0x{:x}, {} mode): {} requests finished", r.scenario, r.seed, r.mode, r.finished));
  script += fmt::format(
      "set multiplot layout 2,1 title '{}'\n"
      "set grid\nset key bottom right\nset logscale x 10\nset yrange [0:1]\n"
      "set xlabel 'latency (ms)'\nset ylabel 'fraction of finished requests'\n"
      "plot $ttft using 1:2 with lines lw 2 title 'time to first token', "
      "$tpot using 1:2 with lines lw 2 title 'time per output token', "
      "$e2e using 1:2 with lines lw 2 title 'end to end'\n"
      "unset logscale x\nset yrange [0:*]\nset key top right\n"
      "set xlabel 'simulated time (s)'\nset ylabel 'pages in use'\n"
      "set y2label 'requests'\nset y2tics\nset y2range [0:*]\n"
      "plot $pool using 1:2 with steps lw 2 title 'pages in use (of {})', "
      "$pool using 1:3 with steps lw 1 axes x1y2 title 'running', "
      "$pool using 1:4 with steps lw 1 axes x1y2 title 'waiting'\n"
      "unset multiplot\n",
      title, r.pool_pages);
  return script;
}

Status WriteRunPlot(const sim::RunReport& report, const std::string& path) {
  KVSIM_RETURN_IF_ERROR(CheckPlotPath(path));
  const std::string temporary = TemporaryBeside(path);
  KVSIM_ASSIGN_OR_RETURN(const std::string script, RunPlotScript(report, temporary));
  KVSIM_RETURN_IF_ERROR(RunGnuplot(script, temporary));
  return MoveOutputIntoPlace("--plot", temporary, path);
}

}  // namespace kvsim::cli
