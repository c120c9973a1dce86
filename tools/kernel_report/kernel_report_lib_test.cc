// The kernel report's parts on hand-written compiler output: the SASS and ptxas parsers, the
// main-loop rule, occupancy, the ceiling and every way a gate fails.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tools/kernel_report/gates.h"
#include "tools/kernel_report/occupancy.h"
#include "tools/kernel_report/resource_usage.h"
#include "tools/kernel_report/sass_analysis.h"

namespace kvsim::kernel_report {
namespace {

// A listing as cuobjdump prints it: a function with an outer loop (0x20..0x90) that loads 16 + 8
// bytes per lane and holds an inner loop (0x40..0x60) with an HMMA and no load; code for another
// architecture follows and must be ignored.
constexpr char kListing[] = R"(
	code for sm_90a
		Function : _Z6kernelPKf
	.headerflags	@"EF_CUDA_SM90"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                 /* 0x000 */
                                                                          /* 0x000 */
        /*0010*/                   S2R R0, SR_TID.X ;                     /* 0x000 */
        /*0020*/                   LDG.E.128 R4, desc[UR6][R2.64] ;       /* 0x000 */
        /*0030*/               @P0 LDG.E.64 R8, desc[UR6][R2.64+0x10] ;   /* 0x000 */
        /*0040*/                   HMMA.16816.F32.BF16 R12, R4, R8, R12 ; /* 0x000 */
        /*0050*/                   IADD3 R0, R0, 0x1, RZ ;                /* 0x000 */
        /*0060*/              @!P1 BRA 0x40 ;                             /* 0x000 */
        /*0070*/                   NOP ;                                  /* 0x000 */
        /*0080*/                   ISETP.GE.AND P0, PT, R0, 0x10, PT ;    /* 0x000 */
        /*0090*/               @P0 BRA 0x20 ;                             /* 0x000 */
        /*00a0*/                   EXIT ;                                 /* 0x000 */
		Function : _Z8straightPKf
        /*0000*/                   LDG.E R4, desc[UR6][R2.64] ;           /* 0x000 */
        /*0010*/                   LDG.E.U8 R5, desc[UR6][R2.64] ;        /* 0x000 */
        /*0020*/                   EXIT ;                                 /* 0x000 */
	code for sm_80
		Function : _Z6kernelPKf
        /*0000*/                   EXIT ;                                 /* 0x000 */
)";

TEST(SassAnalysis, ParsesTheWantedArchitectureOnly) {
  const std::vector<SassFunction> functions = ParseSass(kListing);
  ASSERT_EQ(functions.size(), 2u);
  EXPECT_EQ(functions[0].mangled_name, "_Z6kernelPKf");
  ASSERT_EQ(functions[0].instructions.size(), 11u);
  EXPECT_EQ(functions[0].instructions[3].opcode, "LDG.E.64");  // the predicate is not the opcode
  EXPECT_EQ(functions[0].instructions[3].address, 0x30);
}

TEST(SassAnalysis, TheMainLoopIsTheLoopThatLoadsMost) {
  const MainLoop loop = FindMainLoop(ParseSass(kListing)[0]);
  EXPECT_TRUE(loop.is_loop);
  EXPECT_EQ(loop.first_address, 0x20);
  EXPECT_EQ(loop.last_address, 0x90);
  EXPECT_EQ(loop.instructions, 7);  // 0x20..0x90 without the NOP
  EXPECT_EQ(loop.load_bytes_per_warp, 32 * (16 + 8));
  EXPECT_EQ(loop.nested_loops, 1);
  ASSERT_EQ(loop.tensor_core_opcodes.size(), 1u);
  EXPECT_EQ(loop.tensor_core_opcodes[0], "HMMA.16816.F32.BF16");
}

// A pipelined kernel: its main loop (0x00..0x30) streams one 16-byte cp.async per lane and runs an
// HMMA; its epilogue loop (0x40..0x70) reads partial sums with two 16-byte plain loads.
constexpr char kPipelined[] = R"(
	code for sm_90a
		Function : _Z9pipelinedPKf
        /*0000*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR6][R4.64] ; /* 0x000 */
        /*0010*/                   HMMA.16816.F32.BF16 R12, R4, R8, R12 ; /* 0x000 */
        /*0020*/                   IADD3 R0, R0, 0x1, RZ ;                /* 0x000 */
        /*0030*/              @!P1 BRA 0x0 ;                              /* 0x000 */
        /*0040*/                   LDG.E.128 R4, desc[UR6][R2.64] ;       /* 0x000 */
        /*0050*/                   LDG.E.128 R8, desc[UR6][R2.64+0x10] ;  /* 0x000 */
        /*0060*/                   FADD R12, R4, R8 ;                     /* 0x000 */
        /*0070*/              @!P2 BRA 0x40 ;                             /* 0x000 */
        /*0080*/                   EXIT ;                                 /* 0x000 */
)";

TEST(SassAnalysis, PipelinedKernelsCanTakeTheLoopOfTheirAsynchronousCopies) {
  const SassFunction function = ParseSass(kPipelined)[0];
  const MainLoop by_loads = FindMainLoop(function);
  EXPECT_EQ(by_loads.first_address, 0x40);
  EXPECT_TRUE(by_loads.tensor_core_opcodes.empty());
  const MainLoop by_copies = FindMainLoop(function, MainLoopRule::kAsyncCopies);
  EXPECT_EQ(by_copies.first_address, 0x0);
  EXPECT_EQ(by_copies.last_address, 0x30);
  EXPECT_EQ(by_copies.async_bytes_per_warp, 32 * 16);
  ASSERT_EQ(by_copies.tensor_core_opcodes.size(), 1u);
  const Result<std::vector<Gate>> gates =
      ParseGates("FastK* bandwidth_fraction=0.8 tensor_cores=yes main_loop=async_copies\n", "g");
  ASSERT_TRUE(gates.ok()) << gates.status().message();
  EXPECT_EQ((*gates)[0].main_loop, MainLoopRule::kAsyncCopies);
  EXPECT_FALSE(
      ParseGates("FastK* bandwidth_fraction=0.8 tensor_cores=yes main_loop=first\n", "g").ok());
}

TEST(SassAnalysis, WithoutALoopTheWholeKernelIsOnePass) {
  const MainLoop loop = FindMainLoop(ParseSass(kListing)[1]);
  EXPECT_FALSE(loop.is_loop);
  EXPECT_EQ(loop.instructions, 3);
  EXPECT_EQ(loop.load_bytes_per_warp, 32 * (4 + 1));
  EXPECT_TRUE(loop.tensor_core_opcodes.empty());
}

TEST(SassAnalysis, LoadWidthsAndTensorCoreOpcodes) {
  EXPECT_EQ(GlobalLoadBytesPerLane("LDGSTS.E.BYPASS.LTC128B.128"), 16);
  EXPECT_EQ(GlobalLoadBytesPerLane("LDG.E.U16.CONSTANT"), 2);
  EXPECT_EQ(GlobalLoadBytesPerLane("LDS.128"), 0);
  EXPECT_EQ(GlobalLoadBytesPerLane("STG.E.128"), 0);
  EXPECT_TRUE(IsBulkGlobalLoad("UTMALDG.2D"));
  EXPECT_TRUE(IsTensorCoreInstruction("QGMMA.64x128x32.F32.E4M3.E4M3"));
  EXPECT_TRUE(IsTensorCoreInstruction("HGMMA.64x64x16.F32.BF16"));
  EXPECT_FALSE(IsTensorCoreInstruction("HFMA2.MMA"));
}

TEST(SassAnalysis, SharedMemoryBytesPerWarp) {
  EXPECT_EQ(SharedBytesPerWarp("LDSM.16.M88.4"), 512);  // four 8x8 matrices of 16-byte rows
  EXPECT_EQ(SharedBytesPerWarp("LDSM.16.MT88.2"), 256);
  EXPECT_EQ(SharedBytesPerWarp("LDSM.16.M88"), 128);
  EXPECT_EQ(SharedBytesPerWarp("LDS.128"), 512);
  EXPECT_EQ(SharedBytesPerWarp("LDS.U8"), 32);
  EXPECT_EQ(SharedBytesPerWarp("LDS"), 128);
  EXPECT_EQ(SharedBytesPerWarp("STS.64"), 256);
  EXPECT_EQ(SharedBytesPerWarp("LDGSTS.E.BYPASS.128.ZFILL"), 512);  // lands in shared memory
  EXPECT_EQ(SharedBytesPerWarp("ATOMS.ADD"), 128);
  EXPECT_EQ(SharedBytesPerWarp("LDG.E.128"), 0);
  EXPECT_EQ(SharedBytesPerWarp("HMMA.16816.F32.BF16"), 0);
  EXPECT_TRUE(ReadsSharedByDescriptor("HGMMA.64x64x16.F32.BF16", " R24, gdesc[UR4], R24"));
  EXPECT_FALSE(ReadsSharedByDescriptor("HMMA.16816.F32.BF16", " R4, R8, R12, R4"));
}

// A loop that stages through shared memory: a 16-byte cp.async, an ldmatrix.x4, a 4-byte load, an
// 8-byte store and a wgmma whose operands come by descriptor.
constexpr char kStaging[] = R"(
	code for sm_90a
		Function : _Z7stagingPKf
        /*0000*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR6][R4.64] ; /* 0x000 */
        /*0010*/                   LDSM.16.M88.4 R8, [R3] ;               /* 0x000 */
        /*0020*/                   LDS R12, [R3+0x10] ;                   /* 0x000 */
        /*0030*/                   STS.64 [R3+0x20], R8 ;                 /* 0x000 */
        /*0040*/                   HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], R24 ; /* 0x000 */
        /*0050*/              @!P1 BRA 0x0 ;                              /* 0x000 */
        /*0060*/                   EXIT ;                                 /* 0x000 */
)";

TEST(SassAnalysis, TheMainLoopCountsWhatMovesThroughSharedMemory) {
  const MainLoop loop = FindMainLoop(ParseSass(kStaging)[0]);
  EXPECT_EQ(loop.load_bytes_per_warp, 512);
  EXPECT_EQ(loop.shared_bytes_per_warp, 512 + 512 + 128 + 256);
  EXPECT_EQ(loop.descriptor_mmas, 1);
  // wgmma shapes are written in lower case inside the opcode.
  ASSERT_EQ(loop.tensor_core_opcodes.size(), 1u);
  EXPECT_EQ(loop.tensor_core_opcodes[0], "HGMMA.64x64x16.F32.BF16");
}

TEST(ResourceUsage, PtxasFiguresOfSm90aEntries) {
  const std::string report = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z1av' for 'sm_90a'
ptxas info    : Function properties for _Z1av
    24 bytes stack frame, 16 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 33024 bytes smem, 400 bytes cmem[0]
ptxas info    : Compiling entry function '_Z1bv' for 'sm_80'
ptxas info    : Function properties for _Z1bv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
)";
  const auto usage = ParsePtxasReport(report);
  ASSERT_EQ(usage.size(), 1u);
  const PtxasUsage& a = usage.at("_Z1av");
  EXPECT_EQ(a.registers, 255);
  EXPECT_EQ(a.stack_frame_bytes, 24);
  EXPECT_EQ(a.spill_store_bytes, 16);
  EXPECT_EQ(a.spill_load_bytes, 12);
  EXPECT_EQ(a.static_shared_bytes, 33024);
}

TEST(ResourceUsage, MaxThreadsFromTheElfAttributes) {
  const std::string dump = R"(.nv.info._Z1av
	<0x1>
	Attribute:	EIATTR_MAX_THREADS
	Format:	EIFMT_SVAL
	Value:	0x80 0x2 0x1
.nv.info._Z1bv
	Attribute:	EIATTR_REGCOUNT
	Value:	0x10 0x1 0x1
)";
  const auto threads = ParseMaxThreads(dump);
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads.at("_Z1av"), 256);
}

TEST(Occupancy, TheTightestLimitWins) {
  // 32 registers x 1024 threads: 32K registers per block, two blocks by registers and threads.
  Occupancy o = ComputeOccupancy(32, 128, 1024);
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_DOUBLE_EQ(o.fraction, 1.0);
  // 255 registers: 8160 per warp, allocated as 8192; four warps take 32K, so two blocks.
  o = ComputeOccupancy(255, 0, 128);
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_EQ(o.limit, "registers");
  // 100 KB of shared memory plus the 1 KB reserved: two blocks in 228 KB.
  o = ComputeOccupancy(32, 100 * 1024, 64);
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_EQ(o.limit, "shared memory");
  // Tiny blocks stop at 32 per SM.
  o = ComputeOccupancy(16, 0, 32);
  EXPECT_EQ(o.blocks_per_sm, 32);
  EXPECT_EQ(o.limit, "blocks");
  EXPECT_EQ(ComputeOccupancy(32, 228 * 1024, 128).blocks_per_sm, 0);
}

TEST(Occupancy, CeilingCountsOnlySchedulersThatHaveAWarp) {
  const GpuFigures gpu{"test", 100, 2000, 4.0};
  // 100 SMs x 4 x 2e9 x 1024 / 64 = 12.8 TB/s.
  EXPECT_DOUBLE_EQ(IssueBoundBytesPerSecond(gpu, 8, 1024, 64), 12.8e12);
  EXPECT_DOUBLE_EQ(IssueBoundBytesPerSecond(gpu, 2, 1024, 64), 6.4e12);
  EXPECT_DOUBLE_EQ(IssueBoundBytesPerSecond(gpu, 8, 1024, 0), 0);
}

TEST(Occupancy, SharedCeilingIsBandwidthTimesLoadBytesPerSharedByte) {
  const GpuFigures gpu{"test", 100, 2000, 4.0};
  // 100 SMs x 128 B x 2e9 = 25.6 TB/s through shared memory; one load byte per two shared bytes.
  EXPECT_DOUBLE_EQ(SharedBoundBytesPerSecond(gpu, 1024, 2048), 12.8e12);
  EXPECT_DOUBLE_EQ(SharedBoundBytesPerSecond(gpu, 1024, 512), 51.2e12);
  EXPECT_TRUE(std::isinf(SharedBoundBytesPerSecond(gpu, 1024, 0)));
}

// 2 M N K per mma.sync warp instruction; a wgmma's over its warpgroup's 4 warps; FP8 and INT8
// against the 8-bit peak, TF32 twice against the 16-bit one.
TEST(SassAnalysis, TensorWorkIsTwiceMnkPerWarp) {
  EXPECT_DOUBLE_EQ(TensorWorkPerWarp("HMMA.16816.F32.BF16").flops16, 2.0 * 16 * 8 * 16);
  EXPECT_DOUBLE_EQ(TensorWorkPerWarp("HMMA.16816.F32.BF16").flops8, 0);
  EXPECT_DOUBLE_EQ(TensorWorkPerWarp("HMMA.1688.F32").flops16, 2.0 * 16 * 8 * 8);
  EXPECT_DOUBLE_EQ(TensorWorkPerWarp("HMMA.1684.F32.TF32").flops16, 2 * 2.0 * 16 * 8 * 4);
  EXPECT_DOUBLE_EQ(TensorWorkPerWarp("HGMMA.64x128x16.F32.BF16").flops16, 2.0 * 64 * 128 * 16 / 4);
  EXPECT_DOUBLE_EQ(TensorWorkPerWarp("QGMMA.64x32x32.F32.E4M3.E5M2").flops8,
                   2.0 * 64 * 32 * 32 / 4);
  EXPECT_DOUBLE_EQ(TensorWorkPerWarp("QGMMA.64x32x32.F32.E4M3.E5M2").flops16, 0);
  EXPECT_DOUBLE_EQ(TensorWorkPerWarp("IMMA.16832.S32.S8.S8").flops8, 2.0 * 16 * 8 * 32);
  for (const char* other : {"FFMA", "LDS.128", "HMMA.999.F32", "HGMMA.64x.F32"}) {
    EXPECT_DOUBLE_EQ(TensorWorkPerWarp(other).flops16 + TensorWorkPerWarp(other).flops8, 0)
        << other;
  }
}

TEST(Occupancy, TensorCeilingIsLoadBytesPerSecondOfPeakWork) {
  const GpuFigures gpu{"test", 100, 2000, 4.0, 1000, 2000};
  // 1e6 16-bit flops at 1e15 per second: 1 ns for 1,024 bytes.
  EXPECT_DOUBLE_EQ(TensorBoundBytesPerSecond(gpu, 1024, TensorWork{1e6, 0}), 1.024e12);
  // and 2e6 8-bit flops at 2e15: another ns.
  EXPECT_DOUBLE_EQ(TensorBoundBytesPerSecond(gpu, 1024, TensorWork{1e6, 2e6}), 0.512e12);
  EXPECT_TRUE(std::isinf(TensorBoundBytesPerSecond(gpu, 1024, TensorWork{})));
}

KernelFacts PassingFacts(const GpuFigures& gpu, const Gate& gate) {
  KernelFacts facts;
  facts.has_usage = true;
  facts.usage.registers = 64;
  facts.threads = 256;
  facts.main_loop.is_loop = true;
  facts.main_loop.instructions = 32;
  facts.main_loop.load_bytes_per_warp = 512;  // 16 B per instruction
  facts.main_loop.tensor_core_opcodes = {"HGMMA.64x64x16.F32.BF16"};
  ComputeDerived(gpu, &gate, facts);
  return facts;
}

// The one failure of `facts` under `gate` once its ceilings are recomputed, "" when it passes (a
// test failure when there are several).
std::string OnlyFailure(const GpuFigures& gpu, const Gate& gate, KernelFacts& facts) {
  ComputeDerived(gpu, &gate, facts);
  const std::vector<std::string> failures = GateFailures(gpu, gate, facts);
  EXPECT_LE(failures.size(), 1u);
  return failures.empty() ? "" : failures[0];
}

TEST(Gates, EachFailureIsNamed) {
  const GpuFigures gpu{"test", 132, 1830, 4.8, 989, 1979};
  Result<std::vector<Gate>> gates =
      ParseGates("Fast* bandwidth_fraction=0.8 tensor_cores=yes\n", "g");
  ASSERT_TRUE(gates.ok()) << gates.status().message();
  const Gate& gate = gates->at(0);
  EXPECT_TRUE(GateMatches(gate, "FastMlaDecodeKernel"));
  EXPECT_FALSE(GateMatches(gate, "MlaDecodeKernel"));
  // 132 x 4 x 1.83e9 x 16 = 15.5 TB/s, above 3.84.
  EXPECT_TRUE(GateFailures(gpu, gate, PassingFacts(gpu, gate)).empty());

  KernelFacts spills = PassingFacts(gpu, gate);
  spills.usage.spill_load_bytes = 4;
  EXPECT_EQ(GateFailures(gpu, gate, spills).size(), 1u);

  // A stack frame fails the gate on its own, with no spill reported beside it.
  KernelFacts stack = PassingFacts(gpu, gate);
  stack.usage.stack_frame_bytes = 24;
  EXPECT_EQ(OnlyFailure(gpu, gate, stack), "a stack frame of 24 bytes (local memory)");

  KernelFacts no_tensor_cores = PassingFacts(gpu, gate);
  no_tensor_cores.main_loop.tensor_core_opcodes.clear();
  EXPECT_EQ(GateFailures(gpu, gate, no_tensor_cores).size(), 1u);

  KernelFacts slow = PassingFacts(gpu, gate);
  slow.main_loop.instructions = 128;  // 4 B per instruction: 3.87 TB/s ... just above
  EXPECT_EQ(OnlyFailure(gpu, gate, slow), "");
  slow.main_loop.instructions = 129;  // 3.84 TB/s needs 128 or fewer
  EXPECT_NE(OnlyFailure(gpu, gate, slow).find("below the required 3.84 TB/s"), std::string::npos);

  // 132 x 128 x 1.83e9 = 30.9 TB/s of shared memory: 512 load bytes allow at most 4,122 shared.
  KernelFacts staged = PassingFacts(gpu, gate);
  staged.main_loop.shared_bytes_per_warp = 4096;
  EXPECT_EQ(OnlyFailure(gpu, gate, staged), "");
  staged.main_loop.shared_bytes_per_warp = 4224;  // 3.75 TB/s
  EXPECT_NE(OnlyFailure(gpu, gate, staged).find("shared-memory-bound ceiling 3.75 TB/s"),
            std::string::npos);

  // 512 load bytes a warp at 3.84 TB/s allow 512 / 3.84e12 s of work: 131,875 16-bit flops at
  // 989 TFLOP/s.
  KernelFacts compute = PassingFacts(gpu, gate);
  compute.main_loop.tensor_work.flops16 = 131000;
  EXPECT_EQ(OnlyFailure(gpu, gate, compute), "");
  compute.main_loop.tensor_work.flops16 = 133000;  // 3.81 TB/s
  EXPECT_NE(OnlyFailure(gpu, gate, compute).find("tensor-core-bound ceiling 3.81 TB/s"),
            std::string::npos);

  // wgmma operands: their bytes come from the gates file, shared by the block's 8 warps.
  KernelFacts wgmma = PassingFacts(gpu, gate);
  wgmma.main_loop.descriptor_mmas = 4;
  EXPECT_NE(OnlyFailure(gpu, gate, wgmma).find("mma_shared_bytes_per_iteration="),
            std::string::npos);
  const auto failures_with_mma_bytes = [&](const std::string& bytes) {
    Result<std::vector<Gate>> parsed = ParseGates(
        "Fast* bandwidth_fraction=0.8 tensor_cores=yes mma_shared_bytes_per_iteration=" + bytes,
        "g");
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
    ComputeDerived(gpu, &parsed->at(0), wgmma);
    return GateFailures(gpu, parsed->at(0), wgmma);
  };
  EXPECT_TRUE(failures_with_mma_bytes("32768").empty());  // 4,096 a warp: 3.87 TB/s
  EXPECT_EQ(wgmma.main_loop.shared_bytes_per_warp, 0);    // the loop's own count is kept apart
  const std::vector<std::string> over = failures_with_mma_bytes("33792");  // 4,224: 3.75 TB/s
  ASSERT_EQ(over.size(), 1u);
  EXPECT_NE(over[0].find("shared-memory-bound"), std::string::npos);

  KernelFacts unknown_threads = PassingFacts(gpu, gate);
  unknown_threads.threads = 0;
  unknown_threads.occupancy = Occupancy{};
  ComputeDerived(gpu, &gate, unknown_threads);
  EXPECT_EQ(GateFailures(gpu, gate, unknown_threads).size(), 2u);  // and so no ceiling
}

TEST(Gates, MalformedLinesAreErrorsWithTheirLine) {
  EXPECT_EQ(ParseGates("A bandwidth_fraction=0.8\n", "g").status().message(),
            "g:1: A: a gate needs both bandwidth_fraction= and tensor_cores=");
  EXPECT_EQ(ParseGates("# c\nB\n", "g").status().message(),
            "g:2: B: a line that is no gate must give threads=");
  EXPECT_FALSE(ParseGates("C tensor_cores=maybe bandwidth_fraction=1\n", "g").ok());
  Result<std::vector<Gate>> info = ParseGates("D threads=128  # report only\n", "g");
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->at(0).gated);
  EXPECT_EQ(info->at(0).threads, 128);
}

}  // namespace
}  // namespace kvsim::kernel_report
