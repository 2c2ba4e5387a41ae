// BatchNorm kernels: math, the two-level deterministic reductions, launch configuration, memory
// traffic and the atomics choice in kernels/cuda/batchnorm.h.
#include "kernels/cuda/batchnorm.h"

#include "kernels/cuda/kernel_util.cuh"
#include "kernels/cuda/launch.h"

namespace seg::cuda {

namespace {

// Pixel chunks of the reductions: a function of P alone (so is the workspace size).
struct ChunkPlan {
  int chunks = 0, L = 0;
};
ChunkPlan chunk_plan(int64_t P) {
  ChunkPlan plan;
  if (P <= 0) return plan;
  const int64_t chunks = (P + 255) / 256;
  plan.chunks = static_cast<int>(chunks < 1024 ? chunks : 1024);
  plan.L = static_cast<int>((P + plan.chunks - 1) / plan.chunks);
  return plan;
}

enum class Reduce { moments, backward };

// (n, mean, m2) += (nb, mean_b, m2_b), Chan et al.'s pairwise update, in double.
__device__ __forceinline__ void chan_merge(double& n, double& mean, double& m2, double nb, double mean_b, double m2_b) {
  if (nb == 0) return;
  if (n == 0) {
    n = nb, mean = mean_b, m2 = m2_b;
    return;
  }
  const double total = n + nb, delta = mean_b - mean;
  mean += delta * nb / total;
  m2 += m2_b + delta * delta * n * nb / total;
  n = total;
}

// One block: pixels [k*L, min(P, (k+1)*L)) of chunk k = blockIdx.x, channel packs
// blockIdx.y*G .. +G-1 (G = packs_per_block). Thread t owns pack t % G and pixel rows t / G + j*R.
// moments:  part_a = chunk mean, part_b = chunk M2 (double)
// backward: part_a = sum dy', part_b = sum dy'*xhat
// hot-kernel: bn_reduce_partial_kernel
template <class D, int V, Reduce kind, BnActivation act>
__global__ void bn_reduce_partial_kernel(const D* __restrict__ x, const D* __restrict__ dy, int P, int C, int L,
                                         int packs_per_block, const float* __restrict__ mean,
                                         const float* __restrict__ invstd, const float* __restrict__ scale,
                                         const float* __restrict__ beta, BnPassBounds bounds,
                                         double* __restrict__ part_a, double* __restrict__ part_b) {
  __shared__ float sa[kThreads * V], sb[kThreads * V];
  const int t = threadIdx.x, G = packs_per_block, R = kThreads / G;
  const int g = t % G, r = t / G;
  const int c0 = (blockIdx.y * G + g) * V;
  const bool active = r < R && c0 < C;
  const int p0 = blockIdx.x * L, p1 = min(P, p0 + L), len = max(0, p1 - p0);
  float a[V], b[V], pivot[V], m[V], is[V], sc[V], be[V];
  SEG_UNROLL
  for (int v = 0; v < V; ++v) a[v] = b[v] = pivot[v] = m[v] = is[v] = sc[v] = be[v] = 0.0f;
  if (active && len > 0) {
    if constexpr (kind == Reduce::moments) {
      load_f32<V>(x + static_cast<int64_t>(p0) * C + c0, pivot);
    } else {
      SEG_UNROLL
      for (int v = 0; v < V; ++v) {
        m[v] = mean[c0 + v];
        is[v] = invstd[c0 + v];
        if constexpr (act != BnActivation::none) {
          sc[v] = scale[c0 + v];
          be[v] = beta[c0 + v];
        }
      }
    }
    int n = 0;
    for (int p = p0 + r; p < p1; p += R) {
      float xv[V];
      load_f32<V>(x + static_cast<int64_t>(p) * C + c0, xv);
      if constexpr (kind == Reduce::moments) {
        // Welford on the pivot-shifted values: a = running mean, b = running M2.
        ++n;
        const float inv_n = 1.0f / static_cast<float>(n);
        SEG_UNROLL
        for (int v = 0; v < V; ++v) {
          const float s = xv[v] - pivot[v];
          const float d = s - a[v];
          a[v] += d * inv_n;
          b[v] += d * (s - a[v]);
        }
      } else {
        float gv[V];
        load_f32<V>(dy + static_cast<int64_t>(p) * C + c0, gv);
        if constexpr (act != BnActivation::none) {
          // The forward's output y is not read: its mask, from v recomputed (batchnorm_math.h).
          SEG_UNROLL
          for (int v = 0; v < V; ++v)
            gv[v] = bn_activation_passes_at(bn_affine<float>(xv[v], m[v], sc[v], be[v]), bounds, act) ? gv[v] : 0.0f;
        }
        SEG_UNROLL
        for (int v = 0; v < V; ++v) {
          a[v] += gv[v];
          b[v] += gv[v] * ((xv[v] - m[v]) * is[v]);
        }
      }
    }
  }
  SEG_UNROLL
  for (int v = 0; v < V; ++v) {
    sa[t * V + v] = a[v];
    sb[t * V + v] = b[v];
  }
  __syncthreads();
  if (active && r == 0) {
    // Rows in order; every channel of a row has the same count, so the weights are shared.
    double n = 0, ma[V], mb[V];
    SEG_UNROLL
    for (int v = 0; v < V; ++v) ma[v] = mb[v] = 0.0;
    for (int rr = 0; rr < R; ++rr) {
      const float* ra = sa + (rr * G + g) * V;
      const float* rb = sb + (rr * G + g) * V;
      if constexpr (kind == Reduce::moments) {
        const int nb = rr < len ? (len - rr + R - 1) / R : 0;
        if (nb == 0) continue;
        const double total = n + nb, wb = nb / total, wab = n * nb / total;
        SEG_UNROLL
        for (int v = 0; v < V; ++v) {
          const double delta = ra[v] - ma[v];
          ma[v] = n == 0 ? ra[v] : ma[v] + delta * wb;
          mb[v] = n == 0 ? rb[v] : mb[v] + rb[v] + delta * delta * wab;
        }
        n = total;
      } else {
        SEG_UNROLL
        for (int v = 0; v < V; ++v) {
          ma[v] += ra[v];
          mb[v] += rb[v];
        }
      }
    }
    double* out_a = part_a + static_cast<int64_t>(blockIdx.x) * C + c0;
    double* out_b = part_b + static_cast<int64_t>(blockIdx.x) * C + c0;
    SEG_UNROLL
    for (int v = 0; v < V; ++v) {
      out_a[v] = kind == Reduce::moments ? ma[v] + pivot[v] : ma[v];
      out_b[v] = mb[v];
    }
  }
}

// Channel c = blockIdx.x*32 + threadIdx.x; stripe threadIdx.y merges chunks y, y+8, ... in order,
// then the 8 stripes are merged in order by threadIdx.y == 0.
template <Reduce kind>
__global__ void bn_reduce_merge_kernel(const double* __restrict__ part_a, const double* __restrict__ part_b, int chunks,
                                       int C, int P, int L, double* __restrict__ out_a, double* __restrict__ out_b) {
  __shared__ double sn[8][32], sa[8][32], sb[8][32];
  const int tx = threadIdx.x, ty = threadIdx.y, c = blockIdx.x * 32 + tx;
  double n = 0, a = 0, b = 0;
  if (c < C)
    for (int k = ty; k < chunks; k += 8) {
      const double pa = part_a[static_cast<int64_t>(k) * C + c], pb = part_b[static_cast<int64_t>(k) * C + c];
      if constexpr (kind == Reduce::moments) {
        chan_merge(n, a, b, static_cast<double>(max(0, min(P, (k + 1) * L) - k * L)), pa, pb);
      } else {
        a += pa;
        b += pb;
      }
    }
  sn[ty][tx] = n;
  sa[ty][tx] = a;
  sb[ty][tx] = b;
  __syncthreads();
  if (ty == 0 && c < C) {
    for (int s = 1; s < 8; ++s) {
      if constexpr (kind == Reduce::moments) {
        chan_merge(n, a, b, sn[s][tx], sa[s][tx], sb[s][tx]);
      } else {
        a += sa[s][tx];
        b += sb[s][tx];
      }
    }
    out_a[c] = a;
    out_b[c] = b;
  }
}

template <Reduce kind, BnActivation act, class T>
void reduce(const T* x, const T* dy, int64_t P, int64_t C, const float* mean, const float* invstd, const float* scale,
            const float* beta, double* out_a, double* out_b, void* workspace, Stream stream, const char* what) {
  require_int32(P * C, what);
  if (C <= 0) return;
  using D = device_t<T>;
  constexpr int V = kVec16<D>;
  const ChunkPlan plan = chunk_plan(P);
  double* part_a = static_cast<double*>(workspace);
  double* part_b = part_a + static_cast<int64_t>(plan.chunks) * C;
  if (plan.chunks > 0) {
    const bool vec = C % V == 0 && aligned16(x) && (kind == Reduce::moments || aligned16(dy));
    const BnPassBounds bounds = bn_pass_bounds<T>();
    const int64_t packs = vec ? C / V : C;
    const int G = static_cast<int>(packs < kThreads ? packs : kThreads);
    const dim3 grid(static_cast<unsigned>(plan.chunks), static_cast<unsigned>((packs + G - 1) / G));
    if (vec)
      SEG_LAUNCH((bn_reduce_partial_kernel<D, V, kind, act>), grid, kThreads, 0, stream, dev(x), dev(dy),
                 static_cast<int>(P), static_cast<int>(C), plan.L, G, mean, invstd, scale, beta, bounds, part_a, part_b);
    else
      SEG_LAUNCH((bn_reduce_partial_kernel<D, 1, kind, act>), grid, kThreads, 0, stream, dev(x), dev(dy),
                 static_cast<int>(P), static_cast<int>(C), plan.L, G, mean, invstd, scale, beta, bounds, part_a, part_b);
  }
  SEG_LAUNCH((bn_reduce_merge_kernel<kind>), static_cast<unsigned>((C + 31) / 32), dim3(32, 8), 0, stream, part_a,
             part_b, plan.chunks, static_cast<int>(C), static_cast<int>(P), plan.L, out_a, out_b);
}

__global__ void bn_finalize_kernel(const double* __restrict__ mean_in, const double* __restrict__ m2_in, int C,
                                   double M, bool training, double momentum, double eps, const float* __restrict__ gamma,
                                   float* __restrict__ running_mean, float* __restrict__ running_var,
                                   float* __restrict__ mean, float* __restrict__ invstd, float* __restrict__ scale) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float rm = running_mean[c], rv = running_var[c], mu, is, sc;
  bn_finalize_channel<float>(training ? mean_in[c] : 0.0, training ? m2_in[c] : 0.0, M, training, momentum, eps,
                             gamma[c], rm, rv, mu, is, sc);
  if (training) {
    running_mean[c] = rm;
    running_var[c] = rv;
  }
  mean[c] = mu;
  invstd[c] = is;
  scale[c] = sc;
}

__global__ void bn_sync_first_kernel(const double* __restrict__ mean, int64_t P, int C, double* __restrict__ sums) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < C) sums[c] = bn_sync_first_channel(mean[c], P);
}

__global__ void bn_sync_second_kernel(const double* __restrict__ sums, double M, int64_t P, int C,
                                      double* __restrict__ mean, double* __restrict__ m2) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < C) bn_sync_second_channel(sums[c], M, P, mean[c], m2[c]);
}

__global__ void bn_backward_coefficients_kernel(const double* __restrict__ sum_dy, const double* __restrict__ sum_dy_xhat,
                                                int C, double M, bool training, const float* __restrict__ gamma,
                                                const float* __restrict__ invstd, float* __restrict__ k1,
                                                float* __restrict__ k2, float* __restrict__ k3) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  bn_backward_coefficients_channel<float>(sum_dy[c], sum_dy_xhat[c], M, training, gamma[c], invstd[c], k1[c], k2[c],
                                          k3[c]);
}

__global__ void bn_param_grads_kernel(const double* __restrict__ sum_dy, const double* __restrict__ sum_dy_xhat, int C,
                                      float* __restrict__ dgamma, float* __restrict__ dbeta) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  dbeta[c] = static_cast<float>(sum_dy[c]);
  dgamma[c] = static_cast<float>(sum_dy_xhat[c]);
}

// hot-kernel: bn_apply_kernel
template <class D, int V, BnActivation act>
__global__ void bn_apply_kernel(const D* __restrict__ x, int P, int C, const float* __restrict__ mean,
                                const float* __restrict__ scale, const float* __restrict__ beta, D* __restrict__ y) {
  const int packs = C / V, total = P * packs;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int c0 = (i % packs) * V;
    const int64_t o = static_cast<int64_t>(i / packs) * C + c0;
    float xv[V], m[V], s[V], b[V], out[V];
    load_f32<V>(x + o, xv);
    load_f32<V>(mean + c0, m);
    load_f32<V>(scale + c0, s);
    load_f32<V>(beta + c0, b);
    SEG_UNROLL
    for (int v = 0; v < V; ++v) out[v] = bn_activate(bn_affine<float>(xv[v], m[v], s[v], b[v]), act);
    store_f32<V>(y + o, out);
  }
}

// hot-kernel: bn_backward_dx_kernel
template <class D, int V, BnActivation act>
__global__ void bn_backward_dx_kernel(const D* __restrict__ x, const D* __restrict__ dy, int P, int C,
                                      const float* __restrict__ mean, const float* __restrict__ scale,
                                      const float* __restrict__ beta, BnPassBounds bounds, const float* __restrict__ k1,
                                      const float* __restrict__ k2, const float* __restrict__ k3, D* __restrict__ dx) {
  const int packs = C / V, total = P * packs;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int c0 = (i % packs) * V;
    const int64_t o = static_cast<int64_t>(i / packs) * C + c0;
    float xv[V], gv[V], m[V], a[V], b[V], c[V], out[V];
    load_f32<V>(x + o, xv);
    load_f32<V>(dy + o, gv);
    load_f32<V>(mean + c0, m);
    if constexpr (act != BnActivation::none) {
      // The forward's output y is not read: its mask, from v recomputed (batchnorm_math.h).
      float sc[V], be[V];
      load_f32<V>(scale + c0, sc);
      load_f32<V>(beta + c0, be);
      SEG_UNROLL
      for (int v = 0; v < V; ++v)
        gv[v] = bn_activation_passes_at(bn_affine<float>(xv[v], m[v], sc[v], be[v]), bounds, act) ? gv[v] : 0.0f;
    }
    load_f32<V>(k1 + c0, a);
    load_f32<V>(k2 + c0, b);
    load_f32<V>(k3 + c0, c);
    SEG_UNROLL
    for (int v = 0; v < V; ++v) out[v] = a[v] * gv[v] + b[v] * (xv[v] - m[v]) + c[v];
    store_f32<V>(dx + o, out);
  }
}

template <BnActivation act, class T>
void apply(const T* x, int64_t P, int64_t C, const float* mean, const float* scale, const float* beta, T* y,
           Stream stream) {
  require_int32(P * C, "bn_apply");
  if (P * C <= 0) return;
  using D = device_t<T>;
  constexpr int V = kVec16<D>;
  const int p = static_cast<int>(P), c = static_cast<int>(C);
  if (C % V == 0 && aligned16(x) && aligned16(y) && aligned16(mean) && aligned16(scale) && aligned16(beta))
    SEG_LAUNCH((bn_apply_kernel<D, V, act>), grid_for(P * C / V), kThreads, 0, stream, dev(x), p, c, mean, scale, beta,
               dev(y));
  else
    SEG_LAUNCH((bn_apply_kernel<D, 1, act>), grid_for(P * C), kThreads, 0, stream, dev(x), p, c, mean, scale, beta,
               dev(y));
}

template <BnActivation act, class T>
void backward_dx(const T* x, const T* dy, int64_t P, int64_t C, const float* mean, const float* scale, const float* beta,
                 const float* k1, const float* k2, const float* k3, T* dx, Stream stream) {
  require_int32(P * C, "bn_backward_dx");
  if (P * C <= 0) return;
  using D = device_t<T>;
  constexpr int V = kVec16<D>;
  const int p = static_cast<int>(P), c = static_cast<int>(C);
  const BnPassBounds bounds = bn_pass_bounds<T>();
  if (C % V == 0 && aligned16(x) && aligned16(dy) && aligned16(dx) && aligned16(mean) && aligned16(k1) &&
      aligned16(k2) && aligned16(k3) && (act == BnActivation::none || (aligned16(scale) && aligned16(beta))))
    SEG_LAUNCH((bn_backward_dx_kernel<D, V, act>), grid_for(P * C / V), kThreads, 0, stream, dev(x), dev(dy), p, c, mean,
               scale, beta, bounds, k1, k2, k3, dev(dx));
  else
    SEG_LAUNCH((bn_backward_dx_kernel<D, 1, act>), grid_for(P * C), kThreads, 0, stream, dev(x), dev(dy), p, c, mean,
               scale, beta, bounds, k1, k2, k3, dev(dx));
}

unsigned channel_blocks(int64_t C) { return static_cast<unsigned>((C + kThreads - 1) / kThreads); }

}  // namespace

size_t bn_reduce_workspace_bytes(int64_t P, int64_t C) {
  return static_cast<size_t>(2 * static_cast<int64_t>(chunk_plan(P).chunks) * (C > 0 ? C : 0)) * sizeof(double);
}

template <class T>
void bn_channel_moments(const T* x, int64_t P, int64_t C, double* mean, double* m2, void* workspace, Stream stream) {
  reduce<Reduce::moments, BnActivation::none, T>(x, nullptr, P, C, nullptr, nullptr, nullptr, nullptr, mean, m2, workspace,
                                                 stream, "bn_channel_moments");
}

template <>
void bn_finalize<float>(const double* mean_in, const double* m2_in, int64_t C, double M, bool training,
                        double momentum, double eps, const float* gamma, float* running_mean, float* running_var,
                        float* mean, float* invstd, float* scale, Stream stream) {
  if (C <= 0) return;
  SEG_LAUNCH(bn_finalize_kernel, channel_blocks(C), kThreads, 0, stream, mean_in, m2_in, static_cast<int>(C), M,
             training, momentum, eps, gamma, running_mean, running_var, mean, invstd, scale);
}

void bn_sync_first(const double* mean, int64_t P, int64_t C, double* sums, Stream stream) {
  if (C <= 0) return;
  SEG_LAUNCH(bn_sync_first_kernel, channel_blocks(C), kThreads, 0, stream, mean, P, static_cast<int>(C), sums);
}

void bn_sync_second(const double* sums, double M, int64_t P, int64_t C, double* mean, double* m2, Stream stream) {
  if (C <= 0) return;
  SEG_LAUNCH(bn_sync_second_kernel, channel_blocks(C), kThreads, 0, stream, sums, M, P, static_cast<int>(C), mean,
             m2);
}

template <class T, class A>
void bn_apply(const T* x, int64_t P, int64_t C, const A* mean, const A* scale, const A* beta, T* y, Stream stream) {
  apply<BnActivation::none>(x, P, C, mean, scale, beta, y, stream);
}

template <class T, class A>
void bn_apply_act(const T* x, int64_t P, int64_t C, const A* mean, const A* scale, const A* beta, BnActivation act,
                  T* y, Stream stream) {
  switch (act) {
    case BnActivation::none: return apply<BnActivation::none>(x, P, C, mean, scale, beta, y, stream);
    case BnActivation::relu: return apply<BnActivation::relu>(x, P, C, mean, scale, beta, y, stream);
    case BnActivation::relu6: return apply<BnActivation::relu6>(x, P, C, mean, scale, beta, y, stream);
  }
}

template <class T, class A>
void bn_backward_sums(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* invstd, double* sum_dy,
                      double* sum_dy_xhat, void* workspace, Stream stream) {
  reduce<Reduce::backward, BnActivation::none, T>(x, dy, P, C, mean, invstd, nullptr, nullptr, sum_dy, sum_dy_xhat, workspace,
                                                  stream, "bn_backward_sums");
}

template <class T, class A>
void bn_backward_sums_act(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* invstd, const A* scale,
                          const A* beta, BnActivation act, double* sum_dy, double* sum_dy_xhat, void* workspace,
                          Stream stream) {
  const char* what = "bn_backward_sums_act";
  switch (act) {
    case BnActivation::none:
      return reduce<Reduce::backward, BnActivation::none, T>(x, dy, P, C, mean, invstd, scale, beta, sum_dy, sum_dy_xhat,
                                                             workspace, stream, what);
    case BnActivation::relu:
      return reduce<Reduce::backward, BnActivation::relu, T>(x, dy, P, C, mean, invstd, scale, beta, sum_dy, sum_dy_xhat,
                                                             workspace, stream, what);
    case BnActivation::relu6:
      return reduce<Reduce::backward, BnActivation::relu6, T>(x, dy, P, C, mean, invstd, scale, beta, sum_dy, sum_dy_xhat,
                                                              workspace, stream, what);
  }
}

template <>
void bn_backward_coefficients<float>(const double* sum_dy, const double* sum_dy_xhat, int64_t C, double M,
                                     bool training, const float* gamma, const float* invstd, float* k1, float* k2,
                                     float* k3, Stream stream) {
  if (C <= 0) return;
  SEG_LAUNCH(bn_backward_coefficients_kernel, channel_blocks(C), kThreads, 0, stream, sum_dy, sum_dy_xhat,
             static_cast<int>(C), M, training, gamma, invstd, k1, k2, k3);
}

template <>
void bn_param_grads<float>(const double* sum_dy, const double* sum_dy_xhat, int64_t C, float* dgamma, float* dbeta,
                           Stream stream) {
  if (C <= 0) return;
  SEG_LAUNCH(bn_param_grads_kernel, channel_blocks(C), kThreads, 0, stream, sum_dy, sum_dy_xhat, static_cast<int>(C),
             dgamma, dbeta);
}

template <class T, class A>
void bn_backward_dx(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* k1, const A* k2, const A* k3,
                    T* dx, Stream stream) {
  backward_dx<BnActivation::none, T>(x, dy, P, C, mean, nullptr, nullptr, k1, k2, k3, dx, stream);
}

template <class T, class A>
void bn_backward_dx_act(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* scale, const A* beta,
                        const A* k1, const A* k2, const A* k3, BnActivation act, T* dx, Stream stream) {
  switch (act) {
    case BnActivation::none:
      return backward_dx<BnActivation::none, T>(x, dy, P, C, mean, scale, beta, k1, k2, k3, dx, stream);
    case BnActivation::relu:
      return backward_dx<BnActivation::relu, T>(x, dy, P, C, mean, scale, beta, k1, k2, k3, dx, stream);
    case BnActivation::relu6:
      return backward_dx<BnActivation::relu6, T>(x, dy, P, C, mean, scale, beta, k1, k2, k3, dx, stream);
  }
}

#define SEG_INSTANTIATE_CUDA_BN(T)                                                                                   \
  template void bn_channel_moments<T>(const T*, int64_t, int64_t, double*, double*, void*, Stream);                  \
  template void bn_apply<T, float>(const T*, int64_t, int64_t, const float*, const float*, const float*, T*, Stream); \
  template void bn_apply_act<T, float>(const T*, int64_t, int64_t, const float*, const float*, const float*,         \
                                       BnActivation, T*, Stream);                                                    \
  template void bn_backward_sums<T, float>(const T*, const T*, int64_t, int64_t, const float*, const float*, double*, \
                                           double*, void*, Stream);                                                  \
  template void bn_backward_sums_act<T, float>(const T*, const T*, int64_t, int64_t, const float*, const float*,     \
                                               const float*, const float*, BnActivation, double*, double*, void*,    \
                                               Stream);                                                              \
  template void bn_backward_dx<T, float>(const T*, const T*, int64_t, int64_t, const float*, const float*,           \
                                         const float*, const float*, T*, Stream);                                    \
  template void bn_backward_dx_act<T, float>(const T*, const T*, int64_t, int64_t, const float*, const float*,       \
                                             const float*, const float*, const float*, const float*, BnActivation, T*, \
                                             Stream);
SEG_INSTANTIATE_CUDA_BN(float)
SEG_INSTANTIATE_CUDA_BN(f16)
SEG_INSTANTIATE_CUDA_BN(bf16)

}  // namespace seg::cuda
