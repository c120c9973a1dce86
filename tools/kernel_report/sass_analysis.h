// Reading NVIDIA's SASS listings (cuobjdump --dump-sass) for the static kernel report: the
// instructions of each function, its main loop, and what that loop loads and computes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvsim::kernel_report {

// One SASS instruction: its byte address in the function, its opcode with modifiers
// ("LDG.E.128"), and its predicate-free operand text.
struct SassInstruction {
  int64_t address = 0;
  std::string opcode;
  std::string operands;
};

// One function of a listing, by its mangled name.
struct SassFunction {
  std::string mangled_name;
  std::vector<SassInstruction> instructions;
};

// The functions of a `cuobjdump --dump-sass` listing, in listing order (sm_90a code only; other
// architectures' sections are skipped).
std::vector<SassFunction> ParseSass(const std::string& listing);

// Bytes one lane reads from global memory with this instruction: LDG, LD (generic, assumed
// global) and LDGSTS (cp.async) by their width modifier (.U8/.S8 1, .U16/.S16 2, none 4, .64 8,
// .128 16); 0 for anything else. Bulk copies (UTMALDG, UBLKCP) carry no size in SASS and count
// through IsBulkGlobalLoad.
int GlobalLoadBytesPerLane(const std::string& opcode);
bool IsBulkGlobalLoad(const std::string& opcode);

// Bytes one warp moves through shared memory with this instruction, reading or writing: LDS and
// STS by their width (as GlobalLoadBytesPerLane) times 32 lanes, LDGSTS (its copy lands in shared
// memory) likewise, ATOMS 4 per lane, LDSM (ldmatrix) 128 per 8x8 matrix (.M88 1, .M88.2 2,
// .M88.4 4, and the .MT88 transposes); 0 for anything else. Tensor-core instructions that read
// their operands from shared memory through descriptors (HGMMA, QGMMA, ...) carry no size in SASS
// and count through ReadsSharedByDescriptor.
int SharedBytesPerWarp(const std::string& opcode);
bool ReadsSharedByDescriptor(const std::string& opcode, const std::string& operands);

// HMMA, HGMMA, QGMMA, IMMA, IGMMA, QMMA, BMMA, BGMMA and their modifiers.
bool IsTensorCoreInstruction(const std::string& opcode);

// The floating-point (or integer) operations of one warp's share of a tensor-core instruction:
// 2 M N K of the shape in its name (HMMA.16816: m16n8k16; HGMMA.64x128x16: m64n128k16), divided
// by the 4 warps of a warpgroup for the wgmma forms (HGMMA, QGMMA, IGMMA), which the warpgroup
// issues together. flops16 counts against the 16-bit-input peak (F16, BF16; TF32 inputs run at
// half that rate and count twice), flops8 against the 8-bit one (E4M3, E5M2, S8, U8). Both 0 for
// any other instruction or a shape it does not read.
struct TensorWork {
  double flops16 = 0;
  double flops8 = 0;
};
TensorWork TensorWorkPerWarp(const std::string& opcode);

// The main loop of a function: the loop (a backward branch and the instructions from its target
// up to it) with the most global-load bytes per iteration; among loops with equal bytes, the one
// with the fewest instructions (the innermost). Without any loop that loads, the whole function is
// taken as one pass. kAsyncCopies ranks loops by their asynchronous copies alone (LDGSTS, and
// bulk copies): in a software-pipelined kernel the operands stream that way, while a split-K or
// combine epilogue loop reads partial sums with plain loads and could outweigh it per iteration.
enum class MainLoopRule { kAllLoads, kAsyncCopies };
struct MainLoop {
  bool is_loop = false;
  int64_t first_address = 0;
  int64_t last_address = 0;
  int64_t instructions = 0;           // per iteration and warp, NOPs excluded
  int64_t load_bytes_per_warp = 0;    // 32 lanes x GlobalLoadBytesPerLane, summed
  int64_t bulk_loads = 0;             // UTMALDG / UBLKCP instructions (bytes from the gates file)
  int64_t async_bytes_per_warp = 0;   // of load_bytes_per_warp, what LDGSTS copies
  int64_t shared_bytes_per_warp = 0;  // SharedBytesPerWarp, summed
  int64_t descriptor_mmas = 0;  // tensor-core instructions reading shared memory by descriptor
  TensorWork tensor_work;       // TensorWorkPerWarp, summed
  MainLoopRule rule = MainLoopRule::kAllLoads;
  int64_t nested_loops = 0;  // loops inside it (or in the whole function), counted once
  std::vector<std::string> tensor_core_opcodes;  // distinct, in order of appearance
};

MainLoop FindMainLoop(const SassFunction& function, MainLoopRule rule = MainLoopRule::kAllLoads);

}  // namespace kvsim::kernel_report
