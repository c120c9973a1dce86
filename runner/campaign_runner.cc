// Running a campaign in worker processes.
#include "runner/campaign_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "sim/campaign/swarm.h"
#include "sim/scenario/scenario_yaml.h"

namespace kvsim::sim {
namespace {

using nlohmann::json;

// The outcome of a run as one line on a worker's pipe.
std::string OutcomeLine(const CaseOutcome& o) {
  json j = {{"k", o.case_index},
            {"row", o.row},
            {"mode", static_cast<int>(o.mode)},
            {"run", static_cast<int>(o.run_mode)},
            {"error", o.error},
            {"detail", o.detail},
            {"fired", o.fired},
            {"en", o.engine},
            {"tag", o.caught_tag},
            {"seal", o.caught_seal},
            {"aborts", o.aborts},
            {"sr", o.silent_reads},
            {"sw", o.silent_writes},
            {"rv", o.read_verdicts},
            {"wv", o.write_verdicts},
            {"or", o.over_refusals},
            {"ore", o.over_refusals_excused},
            {"bad", o.bad_outputs},
            {"fa", o.false_alarms},
            {"ep", o.escapes_predicted},
            {"eu", o.escapes_unpredicted},
            {"drained", o.drained},
            {"steps", o.steps},
            {"hash", o.state_hash}};
  return "R " + j.dump() + "\n";
}

std::optional<CaseOutcome> ParseOutcomeLine(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  try {
    CaseOutcome o;
    o.case_index = j.at("k").get<int64_t>();
    o.row = j.at("row").get<std::string>();
    o.mode = static_cast<TrackerMode>(j.at("mode").get<int>());
    o.run_mode = static_cast<RunMode>(j.at("run").get<int>());
    o.error = j.at("error").get<bool>();
    o.detail = j.at("detail").get<std::string>();
    o.fired = j.at("fired").get<std::array<int64_t, kFaultSites>>();
    o.engine = j.at("en").get<int32_t>();
    if (o.engine < 0 || o.engine >= static_cast<int32_t>(kPresetBars.size())) return std::nullopt;
    o.caught_tag = j.at("tag").get<int64_t>();
    o.caught_seal = j.at("seal").get<int64_t>();
    o.aborts = j.at("aborts").get<std::array<int64_t, kAbortCodes>>();
    o.silent_reads = j.at("sr").get<int64_t>();
    o.silent_writes = j.at("sw").get<int64_t>();
    o.read_verdicts = j.at("rv").get<std::array<int64_t, kAccessVerdicts>>();
    o.write_verdicts = j.at("wv").get<std::array<int64_t, kAccessVerdicts>>();
    o.over_refusals = j.at("or").get<int64_t>();
    o.over_refusals_excused = j.at("ore").get<int64_t>();
    o.bad_outputs = j.at("bad").get<int64_t>();
    o.false_alarms = j.at("fa").get<int64_t>();
    o.escapes_predicted = j.at("ep").get<int64_t>();
    o.escapes_unpredicted = j.at("eu").get<int64_t>();
    o.drained = j.at("drained").get<bool>();
    o.steps = j.at("steps").get<int64_t>();
    o.state_hash = j.at("hash").get<uint64_t>();
    return o;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    done += static_cast<size_t>(n);
  }
}

// The runs of one case: every tracker mode in timing mode, and in kernel mode for the sample.
std::vector<std::pair<TrackerMode, RunMode>> RunsOf(const CampaignSpec& spec, int64_t k) {
  std::vector<std::pair<TrackerMode, RunMode>> runs;
  for (TrackerMode mode : spec.modes) runs.push_back({mode, RunMode::kTiming});
  if (k < spec.kernel_cases) {
    for (TrackerMode mode : spec.modes) runs.push_back({mode, RunMode::kKernel});
  }
  return runs;
}

// A worker: runs cases[first], cases[first + step], ... and reports on `fd`: "S k mode run" before
// each run, its outcome after, "C k" after each case, "D" at the end.
[[noreturn]] void Worker(const CampaignSpec& spec, const std::vector<Scenario>& bases,
                         const CampaignOptions& options, const std::vector<int64_t>& cases,
                         size_t first, size_t step, int fd) {
  Result<CaseRunner> runner =
      CaseRunner::Create(spec, bases, options.configs_root, options.backend);
  if (!runner.ok()) {
    WriteAll(fd, "E " + runner.status().ToString() + "\n");
    _exit(2);
  }
  for (size_t i = first; i < cases.size(); i += step) {
    const int64_t k = cases[i];
    Result<Scenario> scenario = runner->Draw(k);
    for (const auto& [mode, run_mode] : RunsOf(spec, k)) {
      WriteAll(fd, "S " + std::to_string(k) + " " + std::to_string(static_cast<int>(mode)) + " " +
                       std::to_string(static_cast<int>(run_mode)) + "\n");
      CaseOutcome outcome;
      if (scenario.ok()) {
        outcome = runner->Run(*scenario, k, mode, run_mode);
      } else {
        outcome.case_index = k;
        outcome.row = spec.ArmOf(k).Name();
        outcome.mode = mode;
        outcome.run_mode = run_mode;
        outcome.error = true;
        outcome.detail = scenario.status().ToString();
      }
      WriteAll(fd, OutcomeLine(outcome));
    }
    WriteAll(fd, "C " + std::to_string(k) + "\n");
  }
  WriteAll(fd, "D\n");
  _exit(0);
}

struct WorkerState {
  pid_t pid = -1;
  int fd = -1;
  size_t next = 0;  // the index (into the shard's cases) it will run after the current one
  size_t step = 1;
  std::string buffer;
  bool done = false;
  // The run in progress: case, mode, run mode.
  int64_t k = -1;
  TrackerMode mode = TrackerMode::kOff;
  RunMode run_mode = RunMode::kTiming;
  size_t case_index = 0;  // index into the shard's cases of the case in progress
};

Status Spawn(const CampaignSpec& spec, const std::vector<Scenario>& bases,
             const CampaignOptions& options, const std::vector<int64_t>& cases, size_t first,
             size_t step, WorkerState& w) {
  int fds[2];
  if (::pipe(fds) != 0) return InternalError(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return InternalError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    Worker(spec, bases, options, cases, first, step, fds[1]);
  }
  ::close(fds[1]);
  w = WorkerState();
  w.pid = pid;
  w.fd = fds[0];
  w.next = first;
  w.step = step;
  w.case_index = first;
  return Status::Ok();
}

std::string WaitDescription(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  return "";
}

// Runs `scenario` in a process of its own and judges it; a crash of that process is kCrash.
SurpriseKind TrialInProcess(CaseRunner& runner, const Scenario& scenario, int64_t k,
                            TrackerMode mode, RunMode run_mode) {
  int fds[2];
  if (::pipe(fds) != 0) return SurpriseKind::kNone;
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return SurpriseKind::kNone;
  if (pid == 0) {
    ::close(fds[0]);
    const CaseOutcome outcome = runner.Run(scenario, k, mode, run_mode);
    WriteAll(fds[1], OutcomeLine(outcome));
    _exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char chunk[4096];
  ssize_t n;
  while ((n = ::read(fds[0], chunk, sizeof(chunk))) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(chunk, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  const std::string died = WaitDescription(pid);
  if (!died.empty() || text.size() < 3) return SurpriseKind::kCrash;
  std::optional<CaseOutcome> outcome = ParseOutcomeLine(text.substr(2));
  if (!outcome) return SurpriseKind::kCrash;
  return Judge(*outcome, NarrowTags(scenario));
}

std::string ReplayLine(const CampaignOptions& options, int64_t k) {
  return (options.command.empty() ? std::string("kvsim campaign") : options.command) + " --case " +
         std::to_string(k);
}

}  // namespace

Result<CampaignResults> RunCampaign(const CampaignSpec& spec, const std::vector<Scenario>& bases,
                                    const CampaignOptions& options) {
  KVSIM_RETURN_IF_ERROR(ValidateCampaignSpec(spec));
  if (options.jobs < 1 || options.jobs > 1024) {
    return OutOfRangeError("jobs " + std::to_string(options.jobs) +
                           " is out of range; allowed: 1 to 1024");
  }
  // The parent draws cases too (for surprises); checking that it can is the first error a bad
  // base gives.
  KVSIM_ASSIGN_OR_RETURN(CaseRunner parent,
                         CaseRunner::Create(spec, bases, options.configs_root, options.backend));
  const auto started = std::chrono::steady_clock::now();
  const std::vector<int64_t> cases = ShardCases(spec);
  CampaignResults results;
  results.spec = spec;
  results.shards = {spec.shard_index};
  results.bases_hash = BasesHash(bases);
  const size_t jobs =
      std::min<size_t>(static_cast<size_t>(options.jobs), std::max<size_t>(cases.size(), 1));
  std::vector<WorkerState> workers(jobs);
  for (size_t w = 0; w < jobs; ++w) {
    KVSIM_RETURN_IF_ERROR(Spawn(spec, bases, options, cases, w, jobs, workers[w]));
  }
  struct Pending {
    CaseOutcome outcome;
    SurpriseKind kind;
  };
  std::vector<Pending> surprising;
  // Each worker's runs of the case it is on, for the paired figures once the case is whole.
  std::vector<std::vector<CaseOutcome>> case_runs(workers.size());
  int64_t cases_done = 0;
  std::string failure;
  const auto fold = [&](const CaseOutcome& outcome, bool narrow) {
    const SurpriseKind kind = Judge(outcome, narrow);
    results.Add(outcome, kind);
    if (kind != SurpriseKind::kNone) surprising.push_back({outcome, kind});
  };
  while (true) {
    std::vector<pollfd> fds;
    std::vector<size_t> owners;
    for (size_t w = 0; w < workers.size(); ++w) {
      if (workers[w].fd < 0) continue;
      fds.push_back({workers[w].fd, POLLIN, 0});
      owners.push_back(w);
    }
    if (fds.empty()) break;
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return InternalError(std::string("poll: ") + std::strerror(errno));
    }
    for (size_t f = 0; f < fds.size(); ++f) {
      if (fds[f].revents == 0) continue;
      WorkerState& w = workers[owners[f]];
      char chunk[65536];
      const ssize_t n = ::read(w.fd, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        w.buffer.append(chunk, static_cast<size_t>(n));
        size_t line_end;
        while ((line_end = w.buffer.find('\n')) != std::string::npos) {
          const std::string line = w.buffer.substr(0, line_end);
          w.buffer.erase(0, line_end + 1);
          if (line.rfind("S ", 0) == 0) {
            int mode = 0;
            int run_mode = 0;
            long long k = 0;
            std::sscanf(line.c_str(), "S %lld %d %d", &k, &mode, &run_mode);
            w.k = k;
            w.mode = static_cast<TrackerMode>(mode);
            w.run_mode = static_cast<RunMode>(run_mode);
          } else if (line.rfind("R ", 0) == 0) {
            std::optional<CaseOutcome> outcome = ParseOutcomeLine(line.substr(2));
            if (!outcome) return InternalError("a worker wrote an unreadable line: " + line);
            Result<Scenario> drawn = parent.Draw(outcome->case_index);
            fold(*outcome, drawn.ok() && NarrowTags(*drawn));
            case_runs[owners[f]].push_back(*outcome);
            w.k = -1;
          } else if (line.rfind("C ", 0) == 0) {
            std::vector<CaseOutcome>& runs = case_runs[owners[f]];
            for (RunMode run_mode : {RunMode::kTiming, RunMode::kKernel}) {
              std::vector<CaseOutcome> of_mode;
              for (const CaseOutcome& run : runs) {
                if (run.run_mode == run_mode) of_mode.push_back(run);
              }
              results.AddPaired(of_mode);
            }
            runs.clear();
            ++cases_done;
            w.case_index += w.step;
            ++results.cases;
            if (options.progress) {
              options.progress(cases_done, static_cast<int64_t>(cases.size()),
                               results.total_surprises());
            }
          } else if (line == "D") {
            w.done = true;
          } else if (line.rfind("E ", 0) == 0) {
            failure = line.substr(2);
          }
        }
        continue;
      }
      // End of the pipe: the worker finished, or died.
      ::close(w.fd);
      w.fd = -1;
      const std::string died = WaitDescription(w.pid);
      if (!failure.empty()) return InternalError("a campaign worker failed: " + failure);
      if (w.done && died.empty()) continue;
      if (w.k < 0) {
        return InternalError("a campaign worker " + (died.empty() ? "stopped" : died) +
                             " between runs");
      }
      // The run in progress crashed: count it, and carry on after its case.
      CaseOutcome crash;
      crash.case_index = w.k;
      Result<Scenario> drawn = parent.Draw(w.k);
      crash.row = drawn.ok() ? ResultRow(spec.ArmOf(w.k), *drawn) : spec.ArmOf(w.k).Name();
      crash.mode = w.mode;
      crash.run_mode = w.run_mode;
      crash.crashed = true;
      crash.detail = "the run's process " + (died.empty() ? "stopped" : died);
      fold(crash, false);
      case_runs[owners[f]].clear();  // a case with a crashed run is left out of the pairs
      ++cases_done;
      ++results.cases;
      const size_t next = w.case_index + w.step;
      const size_t step = w.step;
      if (next < cases.size()) {
        KVSIM_RETURN_IF_ERROR(Spawn(spec, bases, options, cases, next, step, w));
      }
    }
  }
  std::sort(surprising.begin(), surprising.end(), [](const Pending& a, const Pending& b) {
    return std::make_tuple(a.outcome.case_index, a.outcome.run_mode, a.outcome.mode) <
           std::make_tuple(b.outcome.case_index, b.outcome.run_mode, b.outcome.mode);
  });
  // The case files are a convenience beside the results: a folder that cannot be made or written
  // is said (CampaignResults::out_error), never a reason to lose the table and the JSON.
  bool out_ok = !options.out_dir.empty();
  if (out_ok && !surprising.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.out_dir, error);
    if (error) {
      results.out_error = options.out_dir + ": " + error.message();
      out_ok = false;
    }
  }
  const auto write_case = [&](const std::string& path, const Scenario& scenario) {
    std::ofstream file(path);
    file << ScenarioToYaml(scenario);
    file.close();
    if (file) return true;
    if (results.out_error.empty()) results.out_error = path + ": writing failed";
    return false;
  };
  int32_t shrunk = 0;
  for (const Pending& p : surprising) {
    Surprise s;
    s.case_index = p.outcome.case_index;
    s.row = p.outcome.row;
    s.mode = p.outcome.mode;
    s.run_mode = p.outcome.run_mode;
    s.kind = p.kind;
    s.detail = p.outcome.detail;
    s.replay = ReplayLine(options, s.case_index);
    Result<Scenario> drawn = parent.Draw(s.case_index);
    if (out_ok && drawn.ok()) {
      Scenario scenario = *drawn;
      ApplyTrackerMode(s.mode, scenario);
      scenario.mode = s.run_mode;
      const std::string stem = (std::filesystem::path(options.out_dir) /
                                ("case-" + std::to_string(s.case_index) + "-" +
                                 TrackerModeName(s.mode) + "-" + RunModeName(s.run_mode)))
                                   .string();
      s.scenario_path = stem + ".yaml";
      if (!write_case(s.scenario_path, scenario)) s.scenario_path.clear();
      if (shrunk < options.max_shrinks) {
        ++shrunk;
        const Scenario smaller = ShrinkCase(
            scenario, s.kind,
            [&](const Scenario& candidate) {
              return TrialInProcess(parent, candidate, s.case_index, s.mode, s.run_mode);
            },
            s.shrunk_summary);
        s.shrunk_path = stem + "-shrunk.yaml";
        if (!write_case(s.shrunk_path, smaller)) s.shrunk_path.clear();
      }
    }
    results.surprises.push_back(std::move(s));
  }
  results.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return results;
}

}  // namespace kvsim::sim
