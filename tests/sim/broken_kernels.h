// Launchers of the deliberately broken kernels (tests/sim/broken_*.cu). Each kernel has one bug a
// real GPU could hide; the comment at each kernel says which. Device pointers throughout, unless
// named pinned.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace simtest::broken {

// broken_barriers.cu (blocks of 256 threads; out has one value per block unless noted)
void warp_sums_without_barrier(const float* x, float* block_sums, int blocks);
void tree_reduction_without_barrier(const float* x, float* block_sums, int blocks);
void staging_without_trailing_barrier(const float* x, float* y, int tiles);  // y[i] = x[i] + x[next in tile]
void early_return_before_barrier(const float* x, float* y, int n);           // y[i] = x[i] + x[neighbour]
void barriers_at_different_sites(const float* x, float* y);                  // 64 threads
void half_tile_without_barrier(const __half* x, __half* y);                  // y[t] = x[t + 1 mod 256]

// broken_memory.cu
void read_one_past_the_end(const float* x, int n, float* sum);            // reads x[n]
void write_one_past_the_end(float* y, int n);                             // writes y[n]
void static_shared_out_of_bounds(const float* x, float* y);               // 128 threads, buf[64]
void dynamic_shared_overrun(float* y, int threads, int launched_floats);  // each thread writes smem[tid]
void dynamic_shared_uninitialised(const float* x, float* y);              // 128 threads, reads smem[128]
void non_atomic_cross_block_add(float* total, int blocks);                // *total += 1 per block
void stack_overflow(float* y);                                            // 1 MiB local array
void trap(float* y);                                                      // thread 3 calls __trap()

// broken_warp.cu (y: one value per thread)
void divergent_shuffle_then_barrier(const float* x, float* y);  // 64 threads
void divergent_shuffle_then_exit(const float* x, float* y);     // 64 threads
void partial_warp_reduction(const float* x, float* y);          // 48 threads, full-mask reduction
void shuffle_mask_without_caller(const float* x, float* y);     // 32 threads
void mismatched_collectives(const float* x, float* y);          // 32 threads: shuffle vs ballot
void bad_shuffle_width(const float* x, float* y);               // width 12

// broken_wmma.cu (one 16x16x16 tile: a, b 16x16 row-major halves, c 16x16 floats)
void wmma_bias_by_lane(const __half* a, const __half* b, const float* bias, float* c);
void wmma_lane_dependent_fragment(const __half* a, const __half* b, float* c);
void wmma_misaligned_pointer(const __half* a, const __half* b, float* c);  // a + 8 halves
void wmma_bad_ldm(const __half* a, const __half* b, float* c);             // ldm 12
void wmma_divergent(const __half* a, const __half* b, float* c);           // half the warp

// broken_ptx.cu
void cp_async_without_wait(const float* x, float* y);            // 128 threads
void ldmatrix_misaligned(const unsigned short* x, unsigned* y);  // rows at 8-byte offsets
void cp_async_from_host_memory(const float* host_x, float* y);   // source is not device memory

// broken_streams.cu: broken host code around correct kernels (y = 2 x, or a fill)
void upload_then_compute_without_wait(const float* pinned_x, float* d_x, float* d_y, int n);  // no event wait
void use_peer_memory_without_access(const float* x_on_device_1, float* y_on_device_0, int n);
cudaError_t capture_with_synchronous_copy(float* d_x, int n, float* host_value, cudaGraph_t* graph);
cudaError_t capture_with_malloc(float* d_x, int n, cudaGraph_t* graph);
float read_device_memory_on_host(float* d_y, int n);  // fills with 3, returns d_y[0] read by the host
void read_copy_before_sync(const float* d_x, float* pinned_out, float* seen, int n);
void reuse_staging_buffer_too_early(float* pinned_stage, float* d_a, float* d_b, int n);  // 1s to a, 2s to b

// broken_pointers.cu: y[i] = 2 x[i] (blocks of 128); the bugs are the pointers the host passes
void scale_by_two(const float* x, float* y, int n);
void read_other_threads_local(float* y);  // 64 threads read thread 0's local variable

// broken_performance.cu: correct results, counted waste
void transpose_bank_conflicts(const float* in, float* out, int rows, int cols);  // out = in^T, 32 x 32 tiles
void row_sums_uncoalesced(const float* a, float* sums, int rows, int cols);      // one thread per row

}  // namespace simtest::broken
