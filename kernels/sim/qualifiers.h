// CUDA qualifiers and types for g++, as the simulator needs them.
//
// CUDA's own headers do most of the work: without __CUDACC__, crt/host_defines.h (pulled in by
// cuda_runtime.h) defines __global__, __device__, __host__, __constant__, __managed__ as empty and
// __align__(n) as an alignment attribute; vector_types.h gives uint3, dim3, float4, ...; cuda_fp16.h
// and cuda_bf16.h give __half and __nv_bfloat16 with host-side arithmetic. What is changed here:
//   __shared__        -> thread_local: a block-scope `__shared__ float t[64];` becomes one array per
//                        OS thread, i.e. one per running block, shared by the fibers of that block,
//                        so blocks on parallel workers do not share it. It keeps its contents from
//                        the previous block on the same worker (never poisoned), and ASan puts no
//                        redzones around it (UBSan's bounds check still sees direct indexing).
//                        `extern __shared__` compiles but does not link: use seg::dynamic_smem.
//   __launch_bounds__ -> nothing (limits are not checked).
//   __cluster_dims__  -> nothing (clusters are not simulated).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#undef __shared__
#define __shared__ thread_local

#undef __launch_bounds__
#define __launch_bounds__(...)

#undef __cluster_dims__
#define __cluster_dims__(...)
