// kernel_report: the static kernel report (docs/kernels.md, "Static kernel report"). For every
// kernel of the given CUDA objects: ptxas's registers, spills, stack and shared memory, the
// occupancy they allow on the GPU, the main loop found in the SASS with its tensor-core
// instructions and its global-load bytes per instruction, and the issue-bound bandwidth ceiling
// those give; kernels named in the gates file must pass their gate. Prints a Markdown table (and
// writes it to --out), then the failures; exits 1 when a gate fails or names no kernel.
//
//   kernel_report --cuobjdump PATH --gates FILE --gpu configs/gpus/NAME.yaml [--out FILE]
//                 OBJECT.o OBJECT.ptxas ...
#include <cxxabi.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "base/status.h"
#include "tools/kernel_report/gates.h"

namespace kvsim::kernel_report {
namespace {

struct Options {
  std::string cuobjdump;
  std::string gates;
  std::string gpu;
  std::string out;
  std::vector<std::string> objects;
  std::map<std::string, std::string> reports;  // object stem path -> .ptxas path
};

std::string Stem(const std::string& path) { return path.substr(0, path.rfind('.')); }

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return NotFoundError("cannot read " + path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The standard output of `program args`, or an error with its exit status.
Result<std::string> RunTool(const std::string& program, const std::string& args) {
  const std::string command = "'" + program + "' " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return InternalError("cannot run " + command);
  std::string output;
  char buffer[65536];
  size_t read = 0;
  while ((read = fread(buffer, 1, sizeof(buffer), pipe.get())) > 0) output.append(buffer, read);
  const int status = pclose(pipe.release());
  if (status != 0) {
    return InternalError(command + " failed (status " + std::to_string(status) +
                         "): " + output.substr(0, 2000));
  }
  return output;
}

Result<GpuFigures> ReadGpu(const std::string& path) {
  try {
    const YAML::Node node = YAML::LoadFile(path);
    GpuFigures gpu;
    gpu.name = node["name"].as<std::string>();
    gpu.sm_count = node["sm_count"].as<int>();
    gpu.clock_mhz = node["clock_mhz"].as<double>();
    gpu.memory_bandwidth_tb_s = node["memory_bandwidth_tb_s"].as<double>();
    gpu.bf16_dense_tflop_s = node["bf16_dense_tflop_s"].as<double>();
    gpu.fp8_dense_tflop_s = node["fp8_dense_tflop_s"].as<double>();
    return gpu;
  } catch (const YAML::Exception& error) {
    return InvalidArgumentError(path + ": " + error.what() +
                                " (needs name, sm_count, clock_mhz, memory_bandwidth_tb_s, "
                                "bf16_dense_tflop_s, fp8_dense_tflop_s)");
  }
}

// "void kvsim::cuda::(anonymous namespace)::Foo<(kvsim::X)1, 8>(kvsim::Args)" -> "Foo<(X)1, 8>".
std::string DisplayName(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  std::string name = status == 0 ? demangled.get() : mangled;
  if (name.rfind("void ", 0) == 0) name = name.substr(5);
  if (!name.empty() && name.back() == ')') {
    int depth = 0;
    for (size_t i = name.size(); i-- > 0;) {
      depth += name[i] == ')' ? 1 : name[i] == '(' ? -1 : 0;
      if (depth == 0) {
        name = name.substr(0, i);
        break;
      }
    }
  }
  static const std::regex kQualifier(R"((\(anonymous namespace\)|[A-Za-z_]\w*)::)");
  return std::regex_replace(name, kQualifier, "");
}

Result<Options> ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&](std::string& into) {
      if (i + 1 >= argc) return false;
      into = argv[++i];
      return true;
    };
    bool ok = true;
    if (arg == "--cuobjdump") {
      ok = value(options.cuobjdump);
    } else if (arg == "--gates") {
      ok = value(options.gates);
    } else if (arg == "--gpu") {
      ok = value(options.gpu);
    } else if (arg == "--out") {
      ok = value(options.out);
    } else if (arg.size() > 2 && arg.compare(arg.size() - 2, 2, ".o") == 0) {
      options.objects.push_back(arg);
    } else if (arg.size() > 6 && arg.compare(arg.size() - 6, 6, ".ptxas") == 0) {
      options.reports[Stem(arg)] = arg;
    } else {
      ok = false;
    }
    if (!ok) return InvalidArgumentError("kernel_report: unexpected argument '" + arg + "'");
  }
  if (options.cuobjdump.empty() || options.gates.empty() || options.gpu.empty() ||
      options.objects.empty()) {
    return InvalidArgumentError(
        "usage: kernel_report --cuobjdump PATH --gates FILE --gpu FILE [--out FILE] "
        "OBJECT.o OBJECT.ptxas ...");
  }
  return options;
}

Result<std::vector<KernelFacts>> ReadObject(const Options& options, const std::string& object) {
  KVSIM_ASSIGN_OR_RETURN(const std::string sass,
                         RunTool(options.cuobjdump, "--dump-sass '" + object + "'"));
  KVSIM_ASSIGN_OR_RETURN(const std::string elf,
                         RunTool(options.cuobjdump, "--dump-elf '" + object + "'"));
  std::map<std::string, PtxasUsage> usage;
  const auto report = options.reports.find(Stem(object));
  if (report != options.reports.end()) {
    KVSIM_ASSIGN_OR_RETURN(const std::string text, ReadFile(report->second));
    usage = ParsePtxasReport(text);
  }
  const std::map<std::string, int> max_threads = ParseMaxThreads(elf);
  std::vector<KernelFacts> kernels;
  for (const SassFunction& function : ParseSass(sass)) {
    KernelFacts facts;
    facts.object = BaseName(object);
    facts.mangled_name = function.mangled_name;
    facts.display_name = DisplayName(function.mangled_name);
    facts.base_name = facts.display_name.substr(0, facts.display_name.find('<'));
    const auto found = usage.find(function.mangled_name);
    facts.has_usage = found != usage.end();
    if (facts.has_usage) facts.usage = found->second;
    const auto threads = max_threads.find(function.mangled_name);
    if (threads != max_threads.end()) {
      facts.threads = threads->second;
      facts.threads_source = "launch bounds";
    }
    facts.main_loop = FindMainLoop(function);
    facts.async_main_loop = FindMainLoop(function, MainLoopRule::kAsyncCopies);
    kernels.push_back(facts);
  }
  return kernels;
}

std::string Fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

// The shared-memory-bound ceiling in TB/s, "-" when the loop loads nothing from memory and "none"
// when it moves nothing through shared memory.
std::string SharedCeiling(const KernelFacts& k) {
  if (std::isinf(k.shared_ceiling_bytes_per_second)) return "none";
  if (k.shared_ceiling_bytes_per_second <= 0) return "-";
  return Fixed(k.shared_ceiling_bytes_per_second / 1e12, 2);
}

// The tensor-core-bound ceiling in TB/s, "none" when the loop does no tensor-core work and "-"
// when it loads nothing.
std::string TensorCeiling(const KernelFacts& k) {
  if (std::isinf(k.tensor_ceiling_bytes_per_second)) return "none";
  if (k.tensor_ceiling_bytes_per_second <= 0) return "-";
  return Fixed(k.tensor_ceiling_bytes_per_second / 1e12, 2);
}

std::string Row(const KernelFacts& k, const std::string& gate) {
  const MainLoop& loop = k.main_loop;
  std::string where = loop.is_loop ? "loop" : "whole kernel";
  if (loop.rule == MainLoopRule::kAsyncCopies) where += ", by async copies";
  if (loop.nested_loops > 0) where += " (" + std::to_string(loop.nested_loops) + " nested)";
  std::string tensor = loop.tensor_core_opcodes.empty() ? "none" : "";
  for (const std::string& opcode : loop.tensor_core_opcodes) {
    tensor += (tensor.empty() ? "" : " ") + opcode;
  }
  const bool known = k.threads > 0;
  std::string threads = known ? std::to_string(k.threads) : "?";
  if (k.threads_source == "gates file") threads += " (gates)";
  std::stringstream row;
  row << "| `" << k.display_name << "` | " << k.object << " | "
      << (k.has_usage ? std::to_string(k.usage.registers) : "?") << " | "
      << k.usage.spill_store_bytes << "/" << k.usage.spill_load_bytes << " | "
      << k.usage.stack_frame_bytes << " | " << k.usage.static_shared_bytes << " | " << threads
      << " | "
      << (known ? std::to_string(k.occupancy.blocks_per_sm) + " (" + k.occupancy.limit + ")" : "-")
      << " | " << (known ? Fixed(100 * k.occupancy.fraction, 0) + "%" : "-") << " | " << where
      << " | " << loop.instructions << " | " << loop.load_bytes_per_warp
      << (loop.bulk_loads > 0 ? " + bulk" : "") << " | "
      << (loop.instructions > 0
              ? Fixed(static_cast<double>(loop.load_bytes_per_warp) / loop.instructions, 1)
              : "-")
      << " | " << tensor << " | "
      << (k.ceiling_bytes_per_second > 0 ? Fixed(k.ceiling_bytes_per_second / 1e12, 2) : "-")
      << " | " << loop.shared_bytes_per_warp << (loop.descriptor_mmas > 0 ? " + mma" : "") << " | "
      << SharedCeiling(k) << " | " << TensorCeiling(k) << " | " << gate << " |";
  return row.str();
}

int Run(int argc, char** argv) {
  Result<Options> parsed = ParseOptions(argc, argv);
  if (!parsed.ok()) {
    std::cerr << parsed.status().message() << "\n";
    return 2;
  }
  const Options& options = *parsed;
  Result<GpuFigures> gpu = ReadGpu(options.gpu);
  Result<std::string> gates_text = ReadFile(options.gates);
  if (!gpu.ok() || !gates_text.ok()) {
    std::cerr << "kernel_report: "
              << (!gpu.ok() ? gpu.status().message() : gates_text.status().message()) << "\n";
    return 2;
  }
  Result<std::vector<Gate>> gates = ParseGates(*gates_text, options.gates);
  if (!gates.ok()) {
    std::cerr << "kernel_report: " << gates.status().message() << "\n";
    return 2;
  }
  // The disassembler takes about a second per object, mostly starting up: objects in parallel.
  std::vector<std::future<Result<std::vector<KernelFacts>>>> reads;
  for (const std::string& object : options.objects) {
    reads.push_back(std::async(std::launch::async, ReadObject, std::cref(options), object));
  }
  std::vector<KernelFacts> kernels;
  for (auto& pending : reads) {
    Result<std::vector<KernelFacts>> read = pending.get();
    if (!read.ok()) {
      std::cerr << "kernel_report: " << read.status().message() << "\n";
      return 2;
    }
    kernels.insert(kernels.end(), read->begin(), read->end());
  }
  std::stringstream table;
  table << "Static kernel report for " << gpu->name << " (" << gpu->sm_count << " SMs, "
        << gpu->clock_mhz << " MHz, " << gpu->memory_bandwidth_tb_s << " TB/s, "
        << gpu->bf16_dense_tflop_s << " and " << gpu->fp8_dense_tflop_s
        << " dense TFLOP/s for 16- and 8-bit inputs): issue ceiling = SMs x min(4, resident "
           "warps) x clock x load bytes per instruction of the main loop; shared ceiling = SMs x "
           "128 B x clock x load bytes per byte the main loop moves through shared memory; tensor "
           "ceiling = load bytes per second of tensor-core work at the dense peaks "
           "(docs/kernels.md, \"Static kernel report\").\n\n"
        << "| kernel | object | regs | spill st/ld B | stack B | smem B | threads | CTAs/SM "
           "(limit) | occupancy | main loop | instr/iter | load B/iter/warp | B/instr | "
           "tensor cores | issue ceiling TB/s | shared B/iter/warp | shared ceiling TB/s | tensor "
           "ceiling TB/s | gate |\n"
        << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::vector<std::string> failures;
  std::vector<int> matched(gates->size(), 0);
  for (KernelFacts& kernel : kernels) {
    const Gate* gate = nullptr;
    for (size_t g = 0; g < gates->size(); ++g) {
      if (GateMatches((*gates)[g], kernel.base_name)) {
        gate = &(*gates)[g];
        ++matched[g];
        break;
      }
    }
    if (gate != nullptr && gate->main_loop == MainLoopRule::kAsyncCopies) {
      kernel.main_loop = kernel.async_main_loop;
    }
    ComputeDerived(*gpu, gate, kernel);
    std::string verdict = "-";
    if (gate != nullptr && gate->gated) {
      const std::vector<std::string> reasons = GateFailures(*gpu, *gate, kernel);
      const std::string required = Fixed(gate->bandwidth_fraction * gpu->memory_bandwidth_tb_s, 2) +
                                   " TB/s" + (gate->tensor_cores ? ", tensor cores" : "");
      verdict = (reasons.empty() ? "pass (" : "FAIL (") + required + ")";
      for (const std::string& reason : reasons) {
        failures.push_back(kernel.display_name + " (" + kernel.object + "): " + reason);
      }
    }
    table << Row(kernel, verdict) << "\n";
  }
  for (size_t g = 0; g < gates->size(); ++g) {
    if (matched[g] == 0) {
      failures.push_back((*gates)[g].name + " (" + options.gates + ":" +
                         std::to_string((*gates)[g].line) + "): gated, but no such kernel in " +
                         std::to_string(options.objects.size()) + " objects");
    }
  }
  std::cout << table.str();
  if (!options.out.empty()) {
    std::ofstream out(options.out);
    out << table.str();
    if (!out) {
      std::cerr << "kernel_report: cannot write " << options.out << "\n";
      return 2;
    }
  }
  const auto gated =
      std::count_if(gates->begin(), gates->end(), [](const Gate& gate) { return gate.gated; });
  std::cout << "\n"
            << kernels.size() << " kernels, " << gated << " gates, " << failures.size()
            << " failures\n";
  for (const std::string& failure : failures) std::cout << "FAIL " << failure << "\n";
  return failures.empty() ? 0 : 1;
}

}  // namespace
}  // namespace kvsim::kernel_report

int main(int argc, char** argv) { return kvsim::kernel_report::Run(argc, argv); }
