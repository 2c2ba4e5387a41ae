// The transform matrices of Winograd's minimal filtering algorithm F(m, 3), built at compile time
// from their definition (Toom-Cook), not typed in.
//
// F(m, r) computes m outputs of a 1-D correlation with an r-tap filter,
//   y[i] = sum_{k < r} d[i + k] * g[k],   i < m,   from alpha = m + r - 1 inputs d,
// with alpha multiplications instead of m*r:
//   y = AT * ((G * g) .* (BT * d))        AT: m x alpha, G: alpha x r, BT: alpha x alpha.
// Nesting it once per axis gives the 2-D tile F(m x m, r x r):
//   Y = AT * ((G g G^T) .* (BT d BT^T)) * AT^T,   d: alpha x alpha input tile, Y: m x m outputs.
//
// Where the matrices come from. Multiplying polynomials h(x) (m coefficients) and g(x) (r
// coefficients) gives s(x) of degree alpha - 1; evaluating h and g at alpha - 1 points p_j and at
// infinity (the leading coefficient), multiplying the values, and interpolating back computes s with
// alpha products: s = C * ((Eg g) .* (Eh h)), Eg, Eh the evaluation (Vandermonde) matrices, C the
// interpolation. The correlation y = Mg^T d is the *transpose* of the map h -> g*h = Mg h, so
//   y = Eh^T * ((Eg g) .* (C^T d)):   AT = Eh^T, G = Eg, BT = C^T.
// Lagrange's formula gives C: s(x) = s_inf * prod_j (x - p_j) + sum_i s(p_i) * l_i(x), with
// l_i(x) = prod_{j != i} (x - p_j) / lambda_i and lambda_i = prod_{j != i} (p_i - p_j). The divisions
// by lambda_i are moved from BT's rows into G's rows (a row scale cancels in the element-wise
// product), so BT holds the integer (or dyadic) coefficients of prod_{j != i} (x - p_j) and G the
// fractions p_i^k / lambda_i. This reproduces the usual F(4,3) matrices exactly.
//
// Points: F(2,3): 0, 1, -1;  F(4,3): 0, 1, -1, 2, -2;  F(6,3): 0, 1, -1, 2, -2, 1/2, -1/2.
// Bigger points grow the entries (AT holds p^(m-1), up to 32 for F(6,3)), and with them the rounding
// error: the error measurements are in docs/performance.md ("Winograd").
// tests/kernels/test_conv_winograd.cpp checks the identity above in double for each m.
#pragma once

namespace seg::cpu::winograd {

constexpr int kR = 3;        // filter taps per axis (3x3 kernels only)
constexpr int kMaxAlpha = 8;  // alpha of F(6,3)

struct Matrices {
  int m = 0, alpha = 0;
  double AT[kMaxAlpha][kMaxAlpha] = {};  // m x alpha
  double G[kMaxAlpha][kR] = {};          // alpha x 3
  double BT[kMaxAlpha][kMaxAlpha] = {};  // alpha x alpha
};

constexpr Matrices make_matrices(int m) {
  Matrices M;
  M.m = m;
  M.alpha = m + kR - 1;
  const int a = M.alpha, finite = a - 1;
#ifdef SEG_WINO_EXPERIMENT_POINTS4
  const double p4[kMaxAlpha - 1] = {SEG_WINO_EXPERIMENT_POINTS4};
#ifdef SEG_WINO_EXPERIMENT_POINTS6
  const double p6[kMaxAlpha - 1] = {SEG_WINO_EXPERIMENT_POINTS6};
#else
  const double p6[kMaxAlpha - 1] = {0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5};
#endif
  const double* points = m == 4 ? p4 : p6;
#else
  const double points[kMaxAlpha - 1] = {0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5};
#endif
  // coefficients (ascending powers) of prod_{j in set} (x - p_j); skip = -1 keeps every point
  auto product = [&](int skip, double* coef) {
    for (int k = 0; k < kMaxAlpha; ++k) coef[k] = k == 0 ? 1.0 : 0.0;
    int degree = 0;
    for (int j = 0; j < finite; ++j) {
      if (j == skip) continue;
      for (int k = degree + 1; k > 0; --k) coef[k] = coef[k - 1] - points[j] * coef[k];
      coef[0] = -points[j] * coef[0];
      ++degree;
    }
  };
  for (int i = 0; i < a; ++i) {
    double coef[kMaxAlpha + 1] = {};
    product(i < finite ? i : -1, coef);
    for (int k = 0; k < a; ++k) M.BT[i][k] = coef[k];
    if (i < finite) {
      double lambda = 1.0;
      for (int j = 0; j < finite; ++j)
        if (j != i) lambda *= points[i] - points[j];
      double power = 1.0;
      for (int k = 0; k < kR; ++k, power *= points[i]) M.G[i][k] = power / lambda;
    } else {
      M.G[i][kR - 1] = 1.0;  // infinity: the leading coefficient of g
    }
  }
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < finite; ++j) {
      double power = 1.0;
      for (int k = 0; k < i; ++k) power *= points[j];
      M.AT[i][j] = power;
    }
    M.AT[i][a - 1] = i == m - 1 ? 1.0 : 0.0;
  }
  return M;
}

template <int M>
inline constexpr Matrices kMatrices = make_matrices(M);

// The five linear maps the convolution passes apply along each axis of a tile, as compile-time
// matrices Rows x Cols (at(i, j)). Forward: BT on the input tile, G on the 3x3 filter, AT on the
// products. Backward weight (the transpose of the forward in g): A = AT^T on the output-gradient
// tile, G^T back to 3x3.
template <int M> struct InputMap { static constexpr int rows = M + 2, cols = M + 2;
  static constexpr double at(int i, int j) { return kMatrices<M>.BT[i][j]; } };
template <int M> struct WeightMap { static constexpr int rows = M + 2, cols = kR;
  static constexpr double at(int i, int j) { return kMatrices<M>.G[i][j]; } };
template <int M> struct OutputMap { static constexpr int rows = M, cols = M + 2;
  static constexpr double at(int i, int j) { return kMatrices<M>.AT[i][j]; } };
template <int M> struct OutputGradMap { static constexpr int rows = M + 2, cols = M;
  static constexpr double at(int i, int j) { return kMatrices<M>.AT[j][i]; } };
template <int M> struct WeightGradMap { static constexpr int rows = kR, cols = M + 2;
  static constexpr double at(int i, int j) { return kMatrices<M>.G[j][i]; } };

}  // namespace seg::cpu::winograd
