// fault_table: the fault registry's tables as docs/faults.md carries them.
//
//   bazel run //tools/fault_table                         prints them
//   bazel run //tools/fault_table -- --update "$PWD/docs/faults.md"
//                                                         rewrites them in place, between markers
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "sim/faults/fault_registry.h"

namespace {

constexpr char kBegin[] = "<!-- the fault registry";
constexpr char kEnd[] = "<!-- end of the fault registry -->\n";

int Update(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "fault_table: cannot read " << path << "\n";
    return 2;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const size_t begin = text.find(kBegin);
  const size_t end = text.find(kEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    std::cerr << "fault_table: " << path << " has no registry markers ('" << kBegin << "' ... '"
              << "<!-- end of the fault registry -->')\n";
    return 2;
  }
  const std::string updated = text.substr(0, begin) + kvsim::sim::FaultRegistryMarkdown() +
                              text.substr(end + sizeof(kEnd) - 1);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << updated;
  if (!out.flush()) {
    std::cerr << "fault_table: cannot write " << path << "\n";
    return 2;
  }
  std::cout << (updated == text ? "unchanged: " : "updated: ") << path << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) {
    std::cout << kvsim::sim::FaultRegistryMarkdown();
    return 0;
  }
  if (argc == 3 && std::string(argv[1]) == "--update") return Update(argv[2]);
  std::cerr << "usage: fault_table [--update PATH/TO/docs/faults.md]\n";
  return 2;
}
