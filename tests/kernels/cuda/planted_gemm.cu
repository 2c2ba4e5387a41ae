// The tensor-core GEMM kernel (kernels/cuda/gemm/block_tile.h) with a planted bug, for
// test_gemm_tc_planted.cpp: f16 -> f32, mma.sync family, 64x64x32 block tile, 3 stages, swizzled
// shared memory, A row-major and B row-major, either main loop. Simulator build only (the planted
// bugs are schedule-dependent on a GPU too, where nothing would prove they were caught).
#include "kernels/cuda/gemm/device_launch.h"
#include "kernels/cuda/gemm/operand_source.h"
#include "tests/kernels/cuda/planted_gemm.h"

namespace seg::test {

namespace {
using namespace seg::cuda::tc;
using Shape = TileShape<64, 64, 32, 2, 2, 3>;
using ASrc = MatrixSource<__half, Major::k>;
using BSrc = MatrixSource<__half, Major::mn>;

template <Plant P, MainLoop L>
void run(int M, int N, int K, const seg::f16* A, const seg::f16* B, float* C) {
  using Kernel = GemmKernel<__half, Shape, Major::k, Major::mn, SmemKind::swizzled, MmaSyncWarpTile, ASrc, BSrc, P, L>;
  typename Kernel::Params p{};
  p.a = ASrc{reinterpret_cast<const __half*>(A), K, M, K, 0};
  p.b = BSrc{reinterpret_cast<const __half*>(B), N, K, N, 0};
  p.M = M;
  p.N = N;
  p.K = K;
  p.vec_a = p.vec_b = true;
  p.ep.d = C;
  p.ep.ldd = N;
  p.ep.d_type = OutType::f32;
  p.ep.d_vec = N % 4 == 0;
  launch_gemm<Kernel>(p, 1, 1, seg::cuda::TcWorkspace{}, nullptr);
}
}  // namespace

template <MainLoop L>
void run_loop(PlantedBug bug, int M, int N, int K, const seg::f16* A, const seg::f16* B, float* C) {
  switch (bug) {
    case PlantedBug::none: run<Plant::none, L>(M, N, K, A, B, C); break;
    case PlantedBug::no_barrier_after_wait: run<Plant::no_barrier_after_wait, L>(M, N, K, A, B, C); break;
    case PlantedBug::wait_one_group_short: run<Plant::wait_one_group_short, L>(M, N, K, A, B, C); break;
    case PlantedBug::swizzle_mismatch: run<Plant::swizzle_mismatch, L>(M, N, K, A, B, C); break;
  }
}

void planted_gemm(PlantedBug bug, PlantedLoop loop, int M, int N, int K, const seg::f16* A, const seg::f16* B,
                  float* C) {
  if (loop == PlantedLoop::barrier_first)
    run_loop<MainLoop::barrier_first>(bug, M, N, K, A, B, C);
  else
    run_loop<MainLoop::prefetch_fragments>(bug, M, N, K, A, B, C);
}

}  // namespace seg::test
